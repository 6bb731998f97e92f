// The packaged executable at scale: 20 simulated nodes (own NODENAME, own cache dir, own slice) each run 25 ADD
// processes at once; every pod gets a distinct address inside its node's slice; then 500 DELs leave every pool
// empty and no reservation behind. Nodes run in waves (HEREABOUTS_SCALE_PARALLEL_NODES at a time, default 2, i.e.
// 50 processes) so that a 2-CPU CI machine is not asked for 500 processes at once: with 100 at once on a slow
// machine, a node's 25th process waited out the 30 s lock wait behind 24 CPU-starved holders (code 11); such a call
// is run again, as kubelet would, and counted.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseCidr, contains } from '../../../src/ip/cidr.ts';
import { parseIP } from '../../../src/ip/address.ts';
import { retryLockWaits, runCni, type CniOutcome } from '../../support/cni.ts';
import { controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { requireBinary } from '../../support/paths.ts';
import { cniConf, createNodeSlicePool, limited, poolView, reservationNames } from './harness.ts';

const NODES = 20;
const PODS_PER_NODE = 25;
const PARALLEL_NODES = Number(process.env['HEREABOUTS_SCALE_PARALLEL_NODES'] ?? 2);
const nodes = Array.from({ length: NODES }, (_, i) => `node-${String(i).padStart(2, '0')}`);

let ns: Namespace;
let slices: Map<string, string>;

before(async () => {
  ns = await createNamespace(await controlPlane(), 'scale');
  slices = await createNodeSlicePool(ns, 'scalenet', '10.80.0.0/21', 26, nodes);
});

after(async () => {
  // Unset if before() failed: after hooks run all the same.
  await (ns as Namespace | undefined)?.cleanup();
});

/** Calls answered code 11 after waiting out the node's pool lock, and run again (retryLockWaits). */
let lockRetries = 0;

function call(command: 'ADD' | 'DEL', node: string, pod: number): Promise<CniOutcome> {
  return retryLockWaits(
    () => callOnce(command, node, pod),
    () => lockRetries++,
  );
}

function callOnce(command: 'ADD' | 'DEL', node: string, pod: number): Promise<CniOutcome> {
  const conf = cniConf(ns, node, { name: 'scalenet', range: '10.80.0.0/21', nodeSliceSize: '/26' });
  return runCni(
    requireBinary(),
    {
      command,
      containerId: `${node}-c${pod}`,
      netns: `/var/run/netns/${node}-p${pod}`,
      ifname: 'eth0',
      path: '/opt/cni/bin',
      args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=${node}-p${pod};K8S_POD_UID=uid-${node}-${pod}`,
    },
    conf,
    { timeoutMs: 120_000, extraEnv: { NODENAME: node } },
  );
}

/** Every node's pods at once, nodes in waves. */
async function everyPod(command: 'ADD' | 'DEL'): Promise<Map<string, CniOutcome>> {
  const outcomes = new Map<string, CniOutcome>();
  await limited(
    PARALLEL_NODES,
    nodes.map((node) => async () => {
      const results = await Promise.all(Array.from({ length: PODS_PER_NODE }, (_, p) => call(command, node, p)));
      results.forEach((r, p) => outcomes.set(`${node}/${p}`, r));
    }),
  );
  return outcomes;
}

function failures(outcomes: Map<string, CniOutcome>): string[] {
  return [...outcomes]
    .filter(([, o]) => o.code !== 0)
    .map(([k, o]) => `${k}: exit ${o.code} ${o.signal ?? ''} ${o.stdout} ${o.stderr.slice(0, 300)}`);
}

test(
  `${NODES} nodes x ${PODS_PER_NODE} concurrent ADD processes get ${NODES * PODS_PER_NODE} distinct addresses, each in its node's slice`,
  { timeout: 600_000 },
  async (t) => {
    const started = Date.now();
    const outcomes = await everyPod('ADD');
    t.diagnostic(
      `${outcomes.size} ADDs in ${Date.now() - started} ms; ${lockRetries} run again after a lock wait (code 11)`,
    );
    lockRetries = 0;
    assert.deepEqual(failures(outcomes), []);
    const addresses = new Map<string, string>();
    for (const [key, outcome] of outcomes) {
      const ips = (outcome.json?.['ips'] ?? []) as Array<{ address: string }>;
      assert.equal(ips.length, 1, `${key}: ${outcome.stdout}`);
      const address = ips[0]?.address ?? '';
      assert.match(address, /\/21$/, `${key} answered ${address}, not with the whole range's mask`);
      const node = key.split('/')[0] ?? '';
      const slice = parseCidr(slices.get(node) ?? '');
      assert.ok(
        contains(slice, parseIP(address.split('/')[0] ?? '')),
        `${key} got ${address}, outside its slice ${slices.get(node)}`,
      );
      const holder = addresses.get(address);
      assert.equal(holder, undefined, `${address} handed to both ${holder} and ${key}`);
      addresses.set(address, key);
    }
    assert.equal(addresses.size, NODES * PODS_PER_NODE);
    for (const node of nodes) {
      const view = await poolView(ns, `${node}-${(slices.get(node) ?? '').replace('/', '-')}`);
      assert.equal(view?.allocations.size, PODS_PER_NODE, `pool of ${node}`);
    }
    assert.equal((await reservationNames(ns)).length, NODES * PODS_PER_NODE);
  },
);

test(
  `${NODES * PODS_PER_NODE} DELs leave every slice pool empty and no reservation behind`,
  { timeout: 600_000 },
  async (t) => {
    const started = Date.now();
    const outcomes = await everyPod('DEL');
    t.diagnostic(
      `${outcomes.size} DELs in ${Date.now() - started} ms; ${lockRetries} run again after a lock wait (code 11)`,
    );
    assert.deepEqual(failures(outcomes), []);
    for (const node of nodes) {
      const view = await poolView(ns, `${node}-${(slices.get(node) ?? '').replace('/', '-')}`);
      assert.equal(
        view?.allocations.size,
        0,
        `pool of ${node} still holds ${[...(view?.allocations.keys() ?? [])].join(', ')}`,
      );
    }
    assert.deepEqual(await reservationNames(ns), []);
  },
);
