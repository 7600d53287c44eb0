#!/usr/bin/env node
// llama.cpp oracle for the end-to-end tests, through node-llama-cpp's prebuilt CPU
// binaries (never downloads or compiles anything).
//
//   node llama_cpp.mjs logits --model M.gguf --ids 1,2,3 --steps N \
//       [--out-prompt P.npy] [--out-steps S.npy] [--out-ids I.txt] [--threads 1]
//       [--kv-type F32|F16]   (the KV cache's type; F32 by default)
//     P.npy: float32 [len(ids), vocab], logits at every prompt position (one batch).
//     S.npy: float32 [N, vocab]; row 0 = logits at the last prompt position, row k =
//            logits after feeding generated token k-1 (one token per decode call).
//     I.txt: the N greedily chosen ids (argmax, first maximum), space separated.
//     Same conventions as test/e2e/ref/hf_torch_ref.py; no EOS stop, no BOS added.
//   node llama_cpp.mjs bench --model M.gguf --prompt P --gen N [--threads T]
//     llama-bench's pp and tg tests, one run each: a P-token prompt in one batch, then
//     N tokens one decode call each, both from an empty cache, logits of the last
//     token only; prints {"pp_ts": tok/s, "tg_ts": tok/s} (0 for a test of length 0).
//     What `llmc bench --vs npm` runs when no native llama-bench is at hand; the
//     times include node-llama-cpp's per-call overhead.
//   node llama_cpp.mjs tokenize   --model M.gguf --in strings.json --out ids.json [--specials]
//   node llama_cpp.mjs detokenize --model M.gguf --in ids.json --out strings.json [--specials]
//     No BOS/EOS is added; --specials parses (tokenize) / renders (detokenize) special
//     tokens such as <s> or <|im_start|> written in the text.
//
// Common: --log-level disabled|fatal|error|warn|info|debug (default error; logs go to
// stderr). Exit status 0 on success, 1 with "llama_cpp.mjs: error: ..." otherwise.
import fs from "node:fs";
import { parseArgs } from "node:util";
import { getLlama, GgmlType, LlamaLogLevel } from "node-llama-cpp";

const PROG = "llama_cpp.mjs";
let verbose = false;  // --log-level debug: stack traces on errors

function fail(msg) {
    throw Object.assign(new Error(msg), { userError: true });
}

// Minimal .npy (format 1.0) writer for a float32 C-order 2-D array.
function writeNpy(path, data, rows, cols) {
    let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${rows}, ${cols}), }`;
    const unpadded = 10 + header.length + 1;  // magic+version+len, header, '\n'
    header += " ".repeat((64 - (unpadded % 64)) % 64) + "\n";
    const pre = Buffer.alloc(10);
    pre.write("\x93NUMPY", 0, "latin1");
    pre[6] = 1; pre[7] = 0;
    pre.writeUInt16LE(header.length, 8);
    fs.writeFileSync(path, Buffer.concat([pre, Buffer.from(header, "latin1"),
        Buffer.from(data.buffer, data.byteOffset, rows * cols * 4)]));
}

// Map<token, logit> (node-llama-cpp returns them sorted by value) -> Float32Array by id.
function logitsRow(out, what) {
    const map = out?.next?.logits;
    if (!(map instanceof Map) || map.size === 0)
        fail(`llama.cpp returned no logits for ${what}`);
    const row = new Float32Array(map.size);
    for (const [tok, v] of map) {
        if (!(tok >= 0 && tok < map.size)) fail(`unexpected token id ${tok} in logits of ${what}`);
        row[tok] = v;
    }
    return row;
}

function argmax(row) {  // first maximum, like torch.argmax / np.argmax
    let best = 0;
    for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
    return best;
}

async function loadModel(llama, path, vocabOnly) {
    if (!path) fail("--model is required");
    if (!fs.existsSync(path)) fail(`model file not found: ${path}`);
    return llama.loadModel({
        modelPath: path, gpuLayers: 0, vocabOnly, useMmap: true,
        defaultContextFlashAttention: false, ignoreMemorySafetyChecks: true,
    });
}

async function cmdLogits(llama, o) {
    const ids = (o.ids ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "").map(Number);
    if (ids.length === 0) fail("--ids: empty prompt");
    if (!ids.every(Number.isInteger)) fail(`--ids: not a comma separated integer list: ${o.ids}`);
    const steps = Number(o.steps ?? "16");
    if (!Number.isInteger(steps) || steps < 0) fail(`--steps: bad value ${o.steps}`);
    const threads = Number(o.threads ?? "1");
    if (!Number.isInteger(threads) || threads < 1) fail(`--threads: bad value ${o.threads}`);
    const kvType = o["kv-type"] ?? "F32";
    if (kvType !== "F32" && kvType !== "F16") fail(`--kv-type: expected F32 or F16, got ${kvType}`);

    const model = await loadModel(llama, o.model, false);
    const nVocab = model.fileInfo.metadata?.tokenizer?.ggml?.tokens?.length;
    const bad = ids.find((t) => t < 0 || (nVocab != null && t >= nVocab));
    if (bad !== undefined) fail(`--ids: token id ${bad} outside [0, ${nVocab})`);

    const context = await model.createContext({
        sequences: 1,
        // node-llama-cpp keeps one cell free; llama.cpp rounds n_ctx up to a multiple of 256
        contextSize: ids.length + steps + 1,
        batchSize: ids.length,                 // whole prompt in one llama_decode (n_ubatch = n_batch)
        flashAttention: false,
        threads: { ideal: threads, min: threads },
        experimentalKvCacheKeyType: kvType,
        experimentalKvCacheValueType: kvType,
        swaFullCache: true,
        failedCreationRemedy: false,
        ignoreMemorySafetyChecks: true,
    });
    // Refuse to run with other settings than asked for (node-llama-cpp treats some as hints);
    // a context shift (dropping early tokens when full) must never happen.
    const got = { flash: context.flashAttention, k: context.kvCacheKeyType, v: context.kvCacheValueType,
        batch: context.batchSize, ctx: context.contextSize, threads: context.currentThreads };
    if (got.flash !== false || got.k !== GgmlType[kvType] || got.v !== GgmlType[kvType] || got.batch < ids.length ||
        got.ctx < ids.length + steps + 1 || got.threads !== threads)
        fail(`llama.cpp context settings differ from the requested ones: ${JSON.stringify(got)}`);
    if (["info", "log", "debug"].includes(llama.logLevel))
        process.stderr.write(`${PROG}: ${llama.buildType} llama.cpp ${llama.llamaCppRelease.release}; ` +
            `${llama.systemInfo.trim()}; context ${JSON.stringify(got)}\n`);
    const seq = context.getSequence();
    // generateNext.logits with the default sampler settings (temperature 0 -> greedy
    // sampler only, no penalties/bias) returns llama_get_logits_ith unchanged.
    const want = { generateNext: { logits: true } };
    const noShift = { contextShift: { strategy: () => fail("context full (would shift)") } };

    const promptOut = await seq.controlledEvaluate(ids.map((t) => [t, want]), noShift);
    const V = logitsRow(promptOut[0], "prompt position 0").length;
    const prompt = new Float32Array(ids.length * V);
    let last = null;
    for (let i = 0; i < ids.length; i++) {
        last = logitsRow(promptOut[i], `prompt position ${i}`);
        if (last.length !== V) fail("vocab size changed between rows");
        prompt.set(last, i * V);
    }

    const stepRows = new Float32Array(steps * V), gen = [];
    for (let s = 0; s < steps; s++) {
        stepRows.set(last, s * V);
        const next = argmax(last);
        gen.push(next);
        if (s + 1 < steps) {
            const out = await seq.controlledEvaluate([[next, want]], noShift);
            last = logitsRow(out[0], `step ${s + 1}`);
        }
    }

    if (o["out-prompt"]) writeNpy(o["out-prompt"], prompt, ids.length, V);
    if (o["out-steps"]) writeNpy(o["out-steps"], stepRows, steps, V);
    const line = gen.join(" ");
    if (o["out-ids"]) fs.writeFileSync(o["out-ids"], line + "\n");
    else process.stdout.write(line + "\n");
    await context.dispose();
    await model.dispose();
}

async function cmdBench(llama, o) {
    const count = (v, name, dflt) => {
        const n = Number(v ?? dflt);
        if (!Number.isInteger(n) || n < 0) fail(`--${name}: bad value ${v}`);
        return n;
    };
    const P = count(o.prompt, "prompt", "512"), N = count(o.gen, "gen", "128");
    const threads = count(o.threads, "threads", "1");
    if (threads < 1) fail(`--threads: bad value ${o.threads}`);
    const model = await loadModel(llama, o.model, false);
    const nVocab = model.fileInfo.metadata?.tokenizer?.ggml?.tokens?.length ?? 2;
    const context = await model.createContext({
        sequences: 1, contextSize: Math.max(P, N) + 1, batchSize: Math.max(P, 1),
        flashAttention: false, threads: { ideal: threads, min: threads },
        failedCreationRemedy: false, ignoreMemorySafetyChecks: true,
    });
    if (context.currentThreads !== threads)
        fail(`llama.cpp runs ${context.currentThreads} threads, not ${threads}`);
    const seq = context.getSequence();
    // Logits of the last token computed (and a greedy token sampled from them; the
    // logits themselves are not copied out, as llama-bench does not read them).
    const want = { generateNext: { token: true } };
    // Spread-out ids from a fixed LCG, like llmc bench (not the same ids: timing only).
    let x = 12345;
    const nextId = () => (x = (x * 1103515245 + 12345) % 2147483648) % nVocab;
    const now = () => Number(process.hrtime.bigint()) / 1e9;
    const result = { pp_ts: 0, tg_ts: 0 };
    if (P > 0) {
        const ids = Array.from({ length: P }, nextId);
        const t0 = now();
        await seq.controlledEvaluate(ids.map((t, i) => (i === P - 1 ? [t, want] : t)));
        result.pp_ts = P / (now() - t0);
        await seq.clearHistory();
    }
    if (N > 0) {
        const t0 = now();
        for (let i = 0; i < N; i++) await seq.controlledEvaluate([[nextId(), want]]);
        result.tg_ts = N / (now() - t0);
    }
    process.stdout.write(JSON.stringify(result) + "\n");
    await context.dispose();
    await model.dispose();
}

function readJsonList(path, check, what) {
    if (!path) fail("--in is required");
    let v;
    try { v = JSON.parse(fs.readFileSync(path, "utf8")); } catch (e) { fail(`--in ${path}: ${e.message}`); }
    if (!Array.isArray(v) || !v.every(check)) fail(`--in ${path}: expected a JSON list of ${what}`);
    return v;
}

async function cmdTokenize(llama, o) {
    const strings = readJsonList(o.in, (s) => typeof s === "string", "strings");
    if (!o.out) fail("--out is required");
    const model = await loadModel(llama, o.model, true);
    // common_tokenize(vocab, text, add_special=false, parse_special=--specials)
    const res = strings.map((s) => model.tokenize(s, Boolean(o.specials)));
    fs.writeFileSync(o.out, JSON.stringify(res) + "\n");
    await model.dispose();
}

async function cmdDetokenize(llama, o) {
    const lists = readJsonList(o.in, (l) => Array.isArray(l) && l.every((t) => Number.isInteger(t) && t >= 0),
        "lists of non-negative integer ids");
    if (!o.out) fail("--out is required");
    const model = await loadModel(llama, o.model, true);
    const nVocab = model.fileInfo.metadata?.tokenizer?.ggml?.tokens?.length;
    for (const l of lists) {
        const bad = l.find((t) => nVocab != null && t >= nVocab);
        if (bad !== undefined) fail(`token id ${bad} outside [0, ${nVocab})`);
    }
    // llama_detokenize(remove_special=false, unparse_special=--specials)
    const res = lists.map((l) => model.detokenize(l, Boolean(o.specials)));
    fs.writeFileSync(o.out, JSON.stringify(res) + "\n");
    await model.dispose();
}

async function main() {
    const { values: o, positionals } = parseArgs({
        allowPositionals: true,
        options: {
            model: { type: "string" }, ids: { type: "string" }, steps: { type: "string" },
            threads: { type: "string" }, "kv-type": { type: "string" }, "out-prompt": { type: "string" }, "out-steps": { type: "string" },
            "out-ids": { type: "string" }, in: { type: "string" }, out: { type: "string" },
            specials: { type: "boolean" }, "log-level": { type: "string" },
            prompt: { type: "string" }, gen: { type: "string" },
        },
    });
    const cmds = { logits: cmdLogits, tokenize: cmdTokenize, detokenize: cmdDetokenize, bench: cmdBench };
    if (positionals.length !== 1 || !(positionals[0] in cmds))
        fail(`usage: ${PROG} logits|tokenize|detokenize|bench --model M.gguf ... (got ${JSON.stringify(positionals)})`);
    const logLevel = o["log-level"] ?? "error";
    if (!Object.values(LlamaLogLevel).includes(logLevel)) fail(`--log-level: bad value ${logLevel}`);
    verbose = logLevel === "debug";

    const llama = await getLlama({
        gpu: false, build: "never", skipDownload: true, usePrebuiltBinaries: true,
        progressLogs: false, logLevel, maxThreads: 0,  // 0: the context's `threads` is used as is
        logger: (level, msg) => process.stderr.write(`[llama.cpp ${level}] ${msg}${msg.endsWith("\n") ? "" : "\n"}`),
    });
    try {
        await cmds[positionals[0]](llama, o);
    } finally {
        await llama.dispose();
    }
}

// Explicit exit (the native addon may keep the event loop alive), one macrotask later
// so that llama.cpp log lines still queued for the logger get printed.
const exitSoon = (code) => setTimeout(() => process.exit(code), 10);
main().then(() => exitSoon(0), (e) => {
    process.stderr.write(`${PROG}: error: ${(verbose && !e?.userError ? e?.stack : e?.message) ?? e}\n`);
    exitSoon(1);
});
