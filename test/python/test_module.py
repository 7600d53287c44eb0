"""Modules, pass managers and diagnostics from Python."""
import pytest

MATMUL = """
func.func @mm(%x: tensor<?x16xf32>, %w: tensor<8x16xf32>) -> tensor<?x8xf32> {
  %0 = graph.matmul %x, %w : tensor<?x16xf32>, tensor<8x16xf32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}
"""


def test_parse_print_round_trip(llmc):
    m = llmc.parse(MATMUL)
    m.verify()
    text = str(m)
    assert "graph.matmul" in text
    assert str(llmc.parse(text)) == text


def test_parse_error_is_located(llmc):
    with pytest.raises(llmc.Error) as e:
        llmc.parse("func.func @f() {\n  %0 = graph.silu %x : tensor<4xf32>\n}")
    assert "<string>:2:" in str(e.value)


def test_verify_error_is_located(llmc):
    with pytest.raises(llmc.Error) as e:
        llmc.parse("""
func.func @f(%x: tensor<?x8xf32>, %w: tensor<4x6xf32>) -> tensor<?x4xf32> {
  %0 = graph.matmul %x, %w : tensor<?x8xf32>, tensor<4x6xf32> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}""")
    assert "<string>:3:8" in str(e.value)
    assert "contraction size mismatch" in str(e.value)


def test_import_model(llmc, stories):
    m = llmc.import_model(stories[0], max_seq_len=128)
    m.verify()
    text = str(m)
    assert 'graph.param %arg2["model.embed_tokens.weight"]' in text
    assert "max_seq = 128" in text


def test_import_error_names_the_file(llmc, tmp_path):
    bad = tmp_path / "broken.bin"
    bad.write_bytes(b"\x01\x02")
    with pytest.raises(llmc.Error) as e:
        llmc.import_model(str(bad))
    assert "broken.bin" in str(e.value)


def test_phases_and_pipelines(llmc):
    m = llmc.parse(MATMUL)
    llmc.PassManager("graph").run(m)
    assert "graph.matmul" in str(m)
    llmc.PassManager("builtin.module(convert-graph-to-tl)").run(m)
    text = str(m)
    assert "graph.matmul" not in text and 'tl.block "matmul"' in text
    llmc.PassManager("llmc-llvm").run(m)
    assert "llvm.func @mm" in str(m)


def test_print_ir_after_and_timing(llmc):
    m = llmc.parse(MATMUL)
    seen = []
    pm = llmc.PassManager("tl", timing=True,
                          print_ir_after=lambda name, ir: seen.append((name, ir)))
    pm.run(m)
    names = [n for n, _ in seen]
    assert "convert-graph-to-tl" in names and "graph-layout-weights" in names
    after = dict(seen)["convert-graph-to-tl"]
    assert "tl.block" in after and "graph.matmul" not in after
    assert "ConvertGraphToTL" in pm.timing_report


def test_bad_pipeline_raises(llmc):
    with pytest.raises(llmc.Error) as e:
        llmc.PassManager("no-such-pass").run(llmc.parse(MATMUL))
    assert "no-such-pass" in str(e.value)


def test_failing_pass_raises_with_location(llmc):
    m = llmc.parse("""
func.func @f(%w: !graph.weights) -> tensor<4xf32> {
  %0 = graph.param %w["p"] : tensor<4xf32>
  return %0 : tensor<4xf32>
}""")
    with pytest.raises(llmc.Error) as e:
        llmc.PassManager("builtin.module(convert-graph-to-tl)").run(m)
    assert "<string>:3:8" in str(e.value) and "blob_offset" in str(e.value)
