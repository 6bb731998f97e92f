// The controller's word on warm sets (src/controller/runtime/warm-gate.ts): off while any Whereabouts component runs,
// recognised by its image or its program whatever the image; hereabouts' own pods never count.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { podView, runsWhereabouts, type PodView } from '../../../src/controller/orphans/pod-view.ts';
import { warmVerdict } from '../../../src/controller/runtime/warm-gate.ts';
import { WARM_ALLOWED } from '../../../src/store/kubernetes/objects.ts';

const container = (image: string, extra: Record<string, unknown> = {}) => ({ name: 'c', image, ...extra });

test('runsWhereabouts() knows Whereabouts by image or program, and never takes hereabouts for it', () => {
  const yes = [
    { containers: [container('ghcr.io/k8snetworkplumbingwg/whereabouts:v0.9.4')] },
    { containers: [container('quay.io/openshift/origin-multus-whereabouts-ipam-cni@sha256:abc')] },
    { containers: [container('registry.local:5000/WHEREABOUTS:latest')] },
    // Its daemon, started by a shell from a mirrored image of another name.
    {
      containers: [
        container('mirror.local/cni/ipam:1', {
          command: ['/bin/sh', '-c'],
          args: ['SLEEP=false /install-cni.sh && /ip-control-loop -log-level debug'],
        }),
      ],
    },
    // The CronJob reconciler of older releases.
    { containers: [container('mirror.local/ipam:1', { command: ['/ip-reconciler', '-log-level=verbose'] })] },
    { initContainers: [container('docker.io/whereabouts:1')], containers: [container('busybox')] },
  ];
  const no = [
    { containers: [container('ghcr.io/example/hereabouts:0.9.0')] },
    { containers: [container('registry.local:5000/whereabouts-mirror/hereabouts:1')] }, // a registry path says nothing
    { containers: [container('busybox', { args: ['echo', 'whereabouts-ip-control-loop'] })] },
    { containers: [] },
    {},
  ];
  for (const spec of yes) assert.equal(runsWhereabouts(spec), true, JSON.stringify(spec));
  for (const spec of no) assert.equal(runsWhereabouts(spec), false, JSON.stringify(spec));
});

const pod = (name: string, spec: Record<string, unknown>, phase = 'Running'): [string, PodView] => {
  const view = podView({ metadata: { name, namespace: 'kube-system', uid: name }, spec, status: { phase } });
  assert.ok(view !== undefined);
  return [`kube-system/${name}`, view];
};

test('warmVerdict(): allowed with no Whereabouts pod; off, naming them, while one runs; never before the pods are listed', () => {
  const hereabouts = pod('hereabouts-node-x', { containers: [container('example/hereabouts:1')] });
  const whereabouts = (n: number, phase?: string) =>
    pod(`whereabouts-${n}`, { containers: [container('ghcr.io/k8snetworkplumbingwg/whereabouts:v0.9.4')] }, phase);
  assert.equal(warmVerdict([hereabouts], true), WARM_ALLOWED);
  assert.notEqual(warmVerdict([hereabouts], false), WARM_ALLOWED);
  const off = warmVerdict([hereabouts, whereabouts(1)], true);
  assert.match(off, /Whereabouts runs \(kube-system\/whereabouts-1\)/);
  assert.match(
    warmVerdict(
      [1, 2, 3, 4, 5].map((n) => whereabouts(n)),
      true,
    ),
    /and 2 more/,
  );
  // A finished reconciler Job's pod runs nothing.
  assert.equal(warmVerdict([hereabouts, whereabouts(1, 'Succeeded'), whereabouts(2, 'Failed')], true), WARM_ALLOWED);
  assert.notEqual(warmVerdict([whereabouts(1, 'Pending')], true), WARM_ALLOWED);
});
