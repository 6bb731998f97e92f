// The same model-based test against a real kube-apiserver (HEREABOUTS_CONTROL_PLANE, else one started for this
// file): the real client, with faults injected by wrapping its send().
import { after, test } from 'node:test';
import { controlPlane, stopControlPlane, type ControlPlane } from '../support/control-plane.ts';
import { controlPlaneBackend } from './backends.ts';
import { modelRun } from './suite.ts';

let cp: ControlPlane | undefined;
after(() => cp !== undefined && stopControlPlane(cp));

test(
  'never twice: the model sequences keep every invariant against a real kube-apiserver',
  { timeout: 900_000 },
  async () => {
    cp = await controlPlane();
    await modelRun('control-plane', controlPlaneBackend(cp), {
      steps: 300,
      timeMs: 180_000,
      faultRate: 0.08,
      killRate: 0.08,
      sequenceLength: 30,
      shrinkMs: 20_000,
      shrinkTotalMs: 60_000,
    });
  },
);
