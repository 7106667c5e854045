// llama.cpp's side of bench/model: pp (prompt processing) and tg (generation) tokens/s on a
// GGUF, from llama.cpp's own timing counters (llama_perf_context_print, through
// node-llama-cpp's printTimings). OMNI_NODE_MODULES: the folder holding node-llama-cpp.
//   node llama_bench.mjs MODEL.gguf THREADS PP TG  ->  {"pp_tps": .., "tg_tps": ..}
import {join} from "node:path";
import {pathToFileURL} from "node:url";

const [model_path, threads_text, pp_text, tg_text] = process.argv.slice(2);
const threads = Number(threads_text), pp = Number(pp_text), tg = Number(tg_text);
const modules = process.env.OMNI_NODE_MODULES;
const {getLlama, LlamaLogLevel} = await import(pathToFileURL(join(modules, "node-llama-cpp/dist/index.js")).href);
const lines = [];
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.info,
                              logger: (level, message) => lines.push(message)});
const model = await llama.loadModel({modelPath: model_path, gpuLayers: 0});
const context = await model.createContext({contextSize: pp + tg + 64, batchSize: pp,
                                           threads: {ideal: threads, min: threads}, performanceTracking: true});
const sequence = context.getSequence();
let seed = 12345;
const prompt = Array.from({length: pp}, () => (seed = (seed * 1103515245 + 12345) % 2147483648) % 99000 + 1000);
function timing(label) {  // "prompt eval time =  123.45 ms /   512 tokens" or "eval time = ... / 127 runs"
  const text = lines.join("\n");
  const re = new RegExp(label + " time\\s*=\\s*([0-9.]+) ms\\s*/\\s*([0-9]+)", "g");
  let m, last = null;
  while ((m = re.exec(text)) !== null) last = m;
  return last ? {ms: Number(last[1]), n: Number(last[2])} : null;
}
await sequence.evaluateWithoutGeneratingNewTokens(prompt);
await context.printTimings();
const p = timing("prompt eval");
lines.length = 0;
let produced = 0;
for await (const token of sequence.evaluate([prompt[pp - 1]], {temperature: 0})) {
  if (++produced >= tg) break;
}
await context.printTimings();
const g = timing("(?<!prompt )eval");
console.log(JSON.stringify({pp_tps: p ? p.n / (p.ms / 1000) : null, tg_tps: g ? g.n / (g.ms / 1000) : null,
                            pp_tokens: p && p.n, tg_tokens: g && g.n}));
await context.dispose();
await model.dispose();
