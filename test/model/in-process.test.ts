// The model-based randomized test against the in-memory API server: thousands of steps with faults at every API
// call and process kills, mixed with the real Whereabouts' write order and reconciler, NAD and NodeSlicePool
// deletions, tenants' NADs, legacy reservations, pods with two interfaces, interleavings and locks across pid
// namespaces, claims, and sticky addresses (StatefulSets, KubeVirt VMs and their live migrations, controller
// restarts); the invariants of DESIGN §9 after every step. See runner.ts; knobs in options.ts.
import { test } from 'node:test';
import { memoryBackend } from './backends.ts';
import { modelRun } from './suite.ts';

test(
  'never twice: random ADD/DEL/GC/controller/pod/node/reslice/NAD/Whereabouts sequences with faults keep every invariant (in-memory API)',
  { timeout: 600_000 },
  async () => {
    await modelRun('in-process', memoryBackend(), {
      steps: 10_000,
      timeMs: 90_000,
      faultRate: 0.08,
      killRate: 0.08,
      sequenceLength: 40,
      shrinkMs: 10_000,
      shrinkTotalMs: 90_000,
    });
  },
);
