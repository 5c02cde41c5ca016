import numpy as np, jitops
x = np.random.rand(1000, 33).astype(np.float32); idx = np.arange(7)
r = jitops.explain('index_select', x, 0, idx)
print('explained', r[0]['kernel'])
