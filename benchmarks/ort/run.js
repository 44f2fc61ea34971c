#!/usr/bin/env node
// Runs an ONNX model with ONNX Runtime (onnxruntime-node, CPU execution provider) and reports
// latency, for benchmarks/compare.py.
//
//   node run.js model.onnx --input name=x.npy [...] [--threads 2] [--warmup 5] [--repeat 20]
//                          [--out DIR] [--no-spin]
//
// --no-spin turns off the spinning of ONNX Runtime's intra-op threads between operators
// (session.intra_op.allow_spinning=0), its analogue of OMP_WAIT_POLICY=passive.
//
// Prints one JSON object on stdout: {"latencies_ms": [...], "median_ms": m, "outputs": {...}}
// where each output is written to DIR/<index>.npy (float32 / int64 / int32 / float64 only).
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const NPY_TYPES = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array],
  '<i8': ['int64', BigInt64Array], '<i4': ['int32', Int32Array],
};

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = (major === 1 ? 10 : 12);
  const header = buf.toString('latin1', start, start + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${file}: Fortran order`);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map(s => s.trim())
    .filter(s => s.length).map(Number);
  const type = NPY_TYPES[descr];
  if (!type) throw new Error(`${file}: unsupported dtype ${descr}`);
  const off = start + headerLen;
  const bytes = buf.buffer.slice(buf.byteOffset + off, buf.byteOffset + buf.length);
  return new ort.Tensor(type[0], new type[1](bytes), shape);
}

function writeNpy(file, tensor) {
  const descr = Object.keys(NPY_TYPES).find(k => NPY_TYPES[k][0] === tensor.type);
  if (!descr) throw new Error(`output type ${tensor.type} not supported`);
  const shape = tensor.dims.length === 1 ? `(${tensor.dims[0]},)` : `(${tensor.dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  const pad = 64 - ((10 + header.length + 1) % 64);
  header = header + ' '.repeat(pad % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1; pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const data = Buffer.from(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), data]));
}

function parseArgs(argv) {
  const opts = { inputs: {}, threads: 2, warmup: 5, repeat: 20, out: null, model: null, spin: true };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--input') {
      const [name, file] = argv[++i].split('=');
      opts.inputs[name] = file;
    } else if (a === '--threads') opts.threads = Number(argv[++i]);
    else if (a === '--warmup') opts.warmup = Number(argv[++i]);
    else if (a === '--repeat') opts.repeat = Number(argv[++i]);
    else if (a === '--out') opts.out = argv[++i];
    else if (a === '--no-spin') opts.spin = false;
    else if (!opts.model) opts.model = a;
    else throw new Error(`unexpected argument ${a}`);
  }
  if (!opts.model) throw new Error('usage: run.js model.onnx --input name=file.npy ...');
  return opts;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const session = await ort.InferenceSession.create(opts.model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: opts.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    extra: { session: { intra_op: { allow_spinning: opts.spin ? '1' : '0' } } },
  });
  const feeds = {};
  for (const name of session.inputNames) {
    if (!(name in opts.inputs)) throw new Error(`no --input for model input '${name}'`);
    feeds[name] = readNpy(opts.inputs[name]);
  }
  let results = null;
  for (let i = 0; i < opts.warmup; i++) results = await session.run(feeds);
  const lat = [];
  for (let i = 0; i < opts.repeat; i++) {
    const t0 = process.hrtime.bigint();
    results = await session.run(feeds);
    lat.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  if (!results) results = await session.run(feeds);
  const sorted = [...lat].sort((a, b) => a - b);
  const median = sorted.length ? (sorted.length % 2 ? sorted[(sorted.length - 1) / 2]
    : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2) : null;
  const outputs = {};
  session.outputNames.forEach((name, i) => {
    if (opts.out) {
      const file = path.join(opts.out, `${i}.npy`);
      writeNpy(file, results[name]);
      outputs[name] = file;
    }
  });
  process.stdout.write(JSON.stringify({
    ort_version: require('onnxruntime-node/package.json').version,
    threads: opts.threads, spinning: opts.spin, latencies_ms: lat, median_ms: median, outputs,
  }) + '\n');
}

main().catch(e => { process.stderr.write(`error: ${e.message}\n`); process.exit(1); });
