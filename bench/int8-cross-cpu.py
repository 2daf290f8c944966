# The other half of bench/int8-cross-cpu.ts, run on another machine with onnxruntime's Python package (the same
# version as onnxruntime-node): each int8 file on the written inputs, with onnxruntime's default kernels and with its
# precision mode, against the outputs written on the first machine. Prints the CPU's int8 features and, per output,
# how many floats differ. Where the folder has fp32 files (--speed there), times each against its int8 file:
# onnxruntime's default kernels, 2 threads, taking turns in blocks, p50 of each.   python3 int8-cross-cpu.py <folder>
import json, os, re, sys, time

import numpy as np
import onnxruntime as ort

folder = sys.argv[1]
cpuinfo = open('/proc/cpuinfo').read()
flags = set(re.search(r'^flags\s*:(.*)$', cpuinfo, re.M).group(1).split())
name = re.search(r'^model name\s*:(.*)$', cpuinfo, re.M).group(1).strip()
print(f'cpu {name}, {os.cpu_count()} cores;', ', '.join(f'{f} {f in flags}' for f in ['avx512_vnni', 'avx_vnni', 'avx512vbmi']))
print('onnxruntime', ort.__version__)
cases = json.load(open(os.path.join(folder, 'cases.json')))
for model, m in cases['models'].items():
    for mode in ['default', 'precision']:
        so = ort.SessionOptions()
        so.intra_op_num_threads = 2
        if mode == 'precision':
            so.add_session_config_entry('session.x64quantprecision', '1')
        session = ort.InferenceSession(os.path.join(folder, m['file']), so, providers=['CPUExecutionProvider'])
        for i, case in enumerate(m['cases']):
            x = np.fromfile(os.path.join(folder, case['input']), dtype=np.float32).reshape(case['shape'])
            got = session.run([o['name'] for o in case['outputs']], {case['inputName']: x})
            for o, g in zip(case['outputs'], got):
                want = np.fromfile(os.path.join(folder, o['file']), dtype=np.float32)
                g = g.reshape(-1)
                rel = float(np.sqrt(np.mean((g - want) ** 2)) / max(1e-12, float(np.sqrt(np.mean(want ** 2)))))
                print(f'{model} {mode} {cases["photos"][i]} {o["name"].split("/")[-1]}: {int(np.sum(g != want))} of {want.size} differ, relative RMS {rel:.1e}')

ROUNDS, BLOCK = 10, 10
for model, s in cases.get('speed', {}).items():
    sessions = {}
    for precision in ['fp32', 'int8']:
        so = ort.SessionOptions()
        so.intra_op_num_threads = 2
        sessions[precision] = ort.InferenceSession(os.path.join(folder, s[precision]), so, providers=['CPUExecutionProvider'])
    x = np.random.default_rng(1).random(s['shape'], dtype=np.float32)
    times = {p: [] for p in sessions}
    for r in range(ROUNDS):
        for p in (['fp32', 'int8'] if r % 2 == 0 else ['int8', 'fp32']):
            sess = sessions[p]
            feed = {sess.get_inputs()[0].name: x}
            if r == 0:
                sess.run(None, feed)
            for _ in range(BLOCK):
                t = time.perf_counter()
                sess.run(None, feed)
                times[p].append((time.perf_counter() - t) * 1000)
    p50 = {p: float(np.median(t)) for p, t in times.items()}
    print(f'{model} speed: fp32 p50 {p50["fp32"]:.2f} ms, int8 p50 {p50["int8"]:.2f} ms, fp32 / int8 {p50["fp32"] / p50["int8"]:.2f} ({ROUNDS * BLOCK} runs each)')
