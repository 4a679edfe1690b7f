"""Check the paper 001 acceptance items (spec qos-and-sharing.md A.10, items 1 and 4-8)
on the JSON documents benchmarks/qos_acceptance.sh wrote, and print the tables.

    python benchmarks/qos_acceptance.py OUT [SEEDS]      (SEEDS: 1,2,3)

Each item prints PASS or FAIL with the numbers it was judged on; nothing is tuned here.
"""

import json
import os
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
pat = "sweep_s{seed}_U{U}_C{C}.json"
seeds = [int(s) for s in (sys.argv[2] if len(sys.argv) > 2 else "1,2,3").split(",")]


def load(p):
    p = os.path.join(OUT, p)
    return json.load(open(p)) if os.path.exists(p) and os.path.getsize(p) else None
def parts(d):
    runs = d['runs']
    q = next(r for r in runs if r['scheme'] == 'qops')
    v = {r['oc']: r for r in runs if r['scheme'] == 'vqops'}
    dv = next((r for r in runs if r['scheme'] == 'dvqops'), None)
    return q, v, dv
ok_all = True
def check(name, cond, detail):
    global ok_all
    ok_all &= bool(cond)
    print(f"[{'PASS' if cond else 'FAIL'}] {name}: {detail}")
for seed in seeds:
    print(f"--- seed {seed}")
    d = load(pat.format(seed=seed, U='0.5', C='10'))
    if d:
        q, v, dv = parts(d)
        check('4 every VQoPS f beats QoPS', all(r['revenue'] > q['revenue'] for r in v.values()),
              {f: r['improvement_pct'] for f, r in v.items()})
        nn = q['normal_jobs']
        fr = {f: r['accepted_normal'] / nn for f, r in v.items()}
        check('4 normal accepted <= 0.1% for f >= 0.1', all(x <= 0.001 for f, x in fr.items() if f >= 0.1),
              {f: round(x, 5) for f, x in fr.items()})
        check('4 urgent accepted f=0.4 > f=0', v[0.4]['accepted_urgent'] > v[0.0]['accepted_urgent'],
              (v[0.4]['accepted_urgent'], v[0.0]['accepted_urgent']))
        check('4 QoPS accepts more than VQoPS f >= 0.1', all(q['accepted'] > r['accepted'] for f, r in v.items() if f >= 0.1),
              (q['accepted'], {f: r['accepted'] for f, r in v.items() if f >= 0.1}))
        best = max(v, key=lambda f: v[f]['revenue'])
        check('6 (U=50%, C=10) best f >= 0.1', best >= 0.1, f'best f={best}')
        if dv:
            check('7 (U=50%,C=10) DVQoPS >= 0.9 best, > QoPS', dv['revenue'] >= 0.9 * v[best]['revenue'] and dv['revenue'] > q['revenue'],
                  f"ratio {dv['revenue'] / v[best]['revenue']:.4f}")
    d = load(pat.format(seed=seed, U='0.2', C='10'))
    if d:
        q, v, dv = parts(d)
        best = max(v, key=lambda f: v[f]['revenue'])
        gap = min(v[best]['improvement_pct'] - r['improvement_pct'] for f, r in v.items() if f >= 0.1)
        check('6 (U=20%, C=10) best f = 0.05, f >= 0.1 >= 10 points worse', best == 0.05 and gap >= 10,
              f'best f={best}, smallest gap {gap:.2f} points')
        if dv:
            check('7 (U=20%,C=10) DVQoPS >= 0.9 best, > QoPS', dv['revenue'] >= 0.9 * v[best]['revenue'] and dv['revenue'] > q['revenue'],
                  f"ratio {dv['revenue'] / v[best]['revenue']:.4f}")
    d = load(pat.format(seed=seed, U='0.8', C='2'))
    if d:
        q, v, dv = parts(d)
        best = max(v, key=lambda f: v[f]['revenue'])
        check('6 (U=80%, C=2) best f = 0.1, f >= 0.2 -> -100%', best == 0.1 and all(r['improvement_pct'] == -100 for f, r in v.items() if f >= 0.2),
              f"best f={best}; {[(f, r['improvement_pct']) for f, r in v.items() if f >= 0.2]}")
        check('5 f=0.4 and f=0.2 (strict): 0 accepted, revenue 0', all(v[f]['accepted'] == 0 and v[f]['revenue'] == 0 for f in (0.2, 0.4)),
              [(f, v[f]['accepted'], v[f]['revenue']) for f in (0.2, 0.4)])
        if dv:
            fs = sorted(set(f for _, f in dv['oc_trajectory']))
            check('7 (U=80%,C=2) DVQoPS >= 0.9 best, > QoPS, never f in {0.2,0.4}',
                  dv['revenue'] >= 0.9 * v[best]['revenue'] and dv['revenue'] > q['revenue'] and not set(fs) & {0.2, 0.4},
                  f"ratio {dv['revenue'] / v[best]['revenue']:.4f}, f chosen {fs}")
    for dd in [d for d in (load(pat.format(seed=seed, U=U, C=C)) for U, C in (('0.2','10'),('0.5','10'),('0.8','2'))) if d]:
        check("1 deadline_violations = 0 and processors used <= P in every run", all(r["deadline_violations"] == 0 and r["max_processors_used"] <= r["processors"] for r in dd["runs"]), "")
t = load('tie_accept.json')
if t:
    acc = {r['oc']: r['accepted'] for r in t['runs']}
    check('5 f=0.2 with --oc-tie accept: > 0 accepted', acc.get(0.2, 0) > 0, acc)
t2 = load("table2.json")
if t2:
    rows = sorted(t2["runs"], key=lambda r: float(r["dv_window"].split(":")[1]))
    print(f"--- Table 2 shape: d=1.7, offered load {rows[0]['offered_load']}")
    print(f"{'W (h)':>6s} {'revenue':>14s} {'oc_var_avg':>12s} {'load_var':>12s} {'accepted':>8s}")
    for r in rows:
        print(f"{r['dv_window'].split(':')[1]:>6s} {r['revenue']:14.1f} {r['oc_var_avg']!s:>12s} "
              f"{r['load_var']!s:>12s} {r['accepted']:8d}")
    rev = {float(r["dv_window"].split(":")[1]): r["revenue"] for r in rows}
    lv = [r["load_var"] for r in rows]
    big = {w: x for w, x in rev.items() if w >= 32}
    check("8 revenue at W >= 32 h >= 1.3 x revenue at W = 1 h",
          1.0 in rev and big and min(big.values()) >= 1.3 * rev[1.0],
          {w: round(x / rev[1.0], 4) for w, x in rev.items()} if 1.0 in rev else rev)
    best = max(rev, key=rev.get)
    check("8 best W >= 32 h", best >= 32, f"best W = {best:g} h")
    check("8 load_var strictly decreasing in W",
          all(a is not None and b is not None and b < a for a, b in zip(lv, lv[1:])), lv)
    check("1 deadline_violations = 0 (Table 2 runs)",
          all(r["deadline_violations"] == 0 for r in rows), "")
print("ALL PASS" if ok_all else "SOME FAIL")
