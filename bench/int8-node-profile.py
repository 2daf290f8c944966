# Where the int8 movenet-multipose spends its time on a CPU, node by node, against fp32 (docs/int8.md, "Speed").
# Runs on any machine with onnxruntime's Python package (and onnx, to build the depthwise-fp32 variant), pinned to
# 2 cores (the first two it may use), 2 intra-op threads: p50 of each file over interleaved blocks, then onnxruntime's profile of 60 runs.
# The folder holds movenet-multipose.ort.onnx, movenet-multipose.int8.ort.onnx, faceres.ort.onnx and
# faceres.int8.ort.onnx, copied from models/onnx.      python3 int8-node-profile.py <folder>
import json, os, re, sys, time, collections
import numpy as np, onnx, onnxruntime as ort
from onnx import numpy_helper
os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:2]))  # the first two CPUs it may use (taskset chooses)
D = sys.argv[1]
info = open('/proc/cpuinfo').read()
flags = set(re.search(r'^flags\s*:(.*)$', info, re.M).group(1).split())
print('cpu', re.search(r'^model name\s*:(.*)$', info, re.M).group(1).strip(), {f: f in flags for f in ['avx512_vnni', 'avx_vnni', 'avx512vbmi', 'amx_int8']})
print('onnxruntime', ort.__version__, flush=True)

def dw_fp32(src, dst):
    m = onnx.load(src)
    g = m.graph
    inits = {i.name: i for i in g.initializer}
    prod = {o: n for n in g.node for o in n.output}
    count = 0
    for n in g.node:
        if n.op_type != 'Conv': continue
        group = next((a.i for a in n.attribute if a.name == 'group'), 1)
        if group <= 1: continue
        dq = prod.get(n.input[1])
        if dq is None or dq.op_type != 'DequantizeLinear': continue
        w = numpy_helper.to_array(inits[dq.input[0]]).astype(np.float32)
        s = numpy_helper.to_array(inits[dq.input[1]]).astype(np.float32)
        z = numpy_helper.to_array(inits[dq.input[2]]).astype(np.float32) if len(dq.input) > 2 and dq.input[2] else np.zeros_like(s)
        shape = [-1] + [1] * (w.ndim - 1)
        f = (w - z.reshape(shape)) * s.reshape(shape) if s.ndim else (w - z) * s
        name = n.input[1] + '_f32'
        g.initializer.append(numpy_helper.from_array(f.astype(np.float32), name))
        n.input[1] = name
        count += 1
    onnx.save(m, dst)
    print('depthwise convs kept fp32:', count)

dw = os.path.join(D, 'movenet-dwfp32.onnx')
dw_fp32(os.path.join(D, 'movenet-multipose.int8.ort.onnx'), dw)

def session(path, prof=False, spin=True):
    so = ort.SessionOptions(); so.intra_op_num_threads = 2
    if not spin: so.add_session_config_entry('session.intra_op.allow_spinning', '0')
    if prof: so.enable_profiling = True; so.profile_file_prefix = '/tmp/prof'
    return ort.InferenceSession(path, so, providers=['CPUExecutionProvider'])

rng = np.random.default_rng(1)
sets = {
  'movenet': {'fp32': os.path.join(D, 'movenet-multipose.ort.onnx'), 'int8': os.path.join(D, 'movenet-multipose.int8.ort.onnx'), 'int8-dwfp32': dw, 'shape': (1, 3, 256, 256)},
  'faceres': {'fp32': os.path.join(D, 'faceres.ort.onnx'), 'int8': os.path.join(D, 'faceres.int8.ort.onnx'), 'shape': (1, 3, 224, 224)},
}
for name, s in sets.items():
    x = rng.random(s['shape'], dtype=np.float32)
    ss = {k: session(v) for k, v in s.items() if k != 'shape'}
    times = collections.defaultdict(list)
    for _ in range(3):
        for k, se in ss.items(): se.run(None, {'input': x})
    for r in range(20):
        for k, se in ss.items():
            for _ in range(10):
                t = time.perf_counter(); se.run(None, {'input': x}); times[k].append((time.perf_counter() - t) * 1e3)
    p50 = {k: float(np.median(v)) for k, v in times.items()}
    print(name, 'p50 ms', {k: round(v, 3) for k, v in p50.items()}, 'fp32/x', {k: round(p50['fp32'] / v, 2) for k, v in p50.items()}, flush=True)

# per-node profiles of movenet
for k in ['fp32', 'int8', 'int8-dwfp32']:
    se = session(sets['movenet'][k], prof=True)
    x = rng.random((1, 3, 256, 256), dtype=np.float32)
    for _ in range(60): se.run(None, {'input': x})
    pf = se.end_profiling()
    ev = json.load(open(pf))
    by_type, by_node = collections.Counter(), collections.Counter()
    runs = sum(1 for e in ev if e.get('name') == 'model_run')
    for e in ev:
        if e.get('cat') != 'Node' or not e['name'].endswith('_kernel_time'): continue
        op = e['args'].get('op_name', '?')
        by_type[op] += e['dur']; by_node[(op, e['name'][:-12])] += e['dur']
    tot = sum(by_type.values())
    print(f'--- movenet {k}: {runs} runs, node time per run {tot / runs / 1e3:.2f} ms')
    for op, d in by_type.most_common(12): print(f'  {op:28s} {d / runs / 1e3:7.3f} ms {100 * d / tot:5.1f}%')
    print('  top nodes:')
    for (op, n), d in by_node.most_common(15): print(f'    {op:22s} {d / runs / 1e3:6.3f} ms  {n[-70:]}')
    os.remove(pf)
