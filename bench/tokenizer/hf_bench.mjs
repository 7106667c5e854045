// The Hugging Face side of bench/tokenizer/run.sh: the same measurements as omni-tokenizer-bench
// (main.cpp) with the Rust `tokenizers` library through @anush008/tokenizers, one call at a time
// (one thread: encodeBatch with TOKENIZERS_PARALLELISM=false and RAYON_NUM_THREADS=1, set by run.sh,
// so that the binding's per-call overhead, ~1 ms per promise on a loaded machine, is paid once per
// batch rather than per document).
// usage: node hf_bench.mjs TOOLS_DIR tokenizer.json corpus.jsonl
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

const [toolsDir, tokenizerPath, corpusPath] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const { Tokenizer } = require(`${path.resolve(toolsDir)}/node_modules/@anush008/tokenizers`);
const tokenizer = Tokenizer.fromFile(tokenizerPath);
const docs = fs.readFileSync(corpusPath, 'utf8').split('\n').filter((l) => l).map((l) => JSON.parse(l).text);
const TURNS = 8;
const bytes = docs.reduce((n, d) => n + Buffer.byteLength(d), 0);

async function encodeAll(texts) {
  const encodings = await tokenizer.encodeBatch(texts, { addSpecialTokens: false });
  return encodings.reduce((n, e) => n + e.getIds().length, 0);
}

// Wall time and process CPU time (user + system, all threads) of one measured step.
async function measure(step) {
  const t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  const result = await step();
  const c = process.cpuUsage(c0);
  return { result, wall: Number(process.hrtime.bigint() - t0) / 1e9, cpu: (c.user + c.system) / 1e6 };
}

await encodeAll(docs);  // warm-up
const enc = await measure(() => encodeAll(docs));
const tokens = enc.result, encode_s = enc.wall, encode_cpu_s = enc.cpu;
const prompts = [];
let conversation = '';
docs.forEach((d, i) => { conversation = i % TURNS === 0 ? d : conversation + d; prompts.push(conversation); });
const prompt_bytes = prompts.reduce((n, d) => n + Buffer.byteLength(d), 0);
const turns = await measure(() => encodeAll(prompts));
const prompt_tokens = turns.result, multiturn_full_s = turns.wall, multiturn_full_cpu_s = turns.cpu;
console.log(JSON.stringify({ impl: 'hf', bytes, tokens, encode_s, prompt_bytes, prompt_tokens, multiturn_full_s,
                             encode_cpu_s, multiturn_full_cpu_s,
                             threads: process.env.RAYON_NUM_THREADS ?? 'default' }));
