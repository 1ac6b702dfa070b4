"""New / old graph time of each auto decode case from whole bench runs (results.json) named
old* and new* under DIR, means per arm, geomeans per format and M, and each arm's run-to-run
ratio.    python ab.py DIR old1 old2 new1 new2"""
import json, math, statistics as st, sys
base = sys.argv[1]
def load(d):
    return {(r['shape'],r['format'],r['tokens']): r for r in json.load(open(f'{base}/{d}/results.json'))['results'] if r['impl']=='auto' and r['status']=='ok'}
runs = {d: load(d) for d in sys.argv[2:]}
olds=[d for d in runs if d.startswith('old')]; news=[d for d in runs if d.startswith('new')]
keys=sorted(runs[olds[0]])
ratios={}
for k in keys:
    o=st.mean(runs[d][k]['us'] for d in olds); n=st.mean(runs[d][k]['us'] for d in news)
    ratios[k]=n/o
    print(f"{k[0]:18s} {k[1]:10s} M={k[2]}  old {o:7.1f} ({'/'.join('%.1f'%runs[d][k]['us'] for d in olds)})  new {n:7.1f} ({'/'.join('%.1f'%runs[d][k]['us'] for d in news)})  {n/o:.3f}  %floor {runs[news[0]][k]['pct_floor']:.0f}")
g=lambda xs: math.exp(st.mean(math.log(x) for x in xs))
for f in ('bf16','fp8_tensor','fp8_block'):
    print(f, 'geomean new/old %.3f' % g([v for k,v in ratios.items() if k[1]==f]))
for m in (1,2,4,8):
    print('M',m, 'geomean new/old %.3f' % g([v for k,v in ratios.items() if k[2]==m]))
print('all %.3f'%g(ratios.values()))
# within-arm noise
print('old1/old2 %.3f'%g([runs[olds[0]][k]['us']/runs[olds[-1]][k]['us'] for k in keys]), 'new1/new2 %.3f'%g([runs[news[0]][k]['us']/runs[news[-1]][k]['us'] for k in keys]))
