// Crashes at random points: 100 ADD processes of the packaged executable (10 nodes, one shared pool, reservations
// on), each SIGKILLed after a random delay. No address may end up with two owners; whatever the crashes leaked is
// listed by an audit of the API objects, and the DELs the runtime sends for failed ADDs clear every leaked
// allocation (a reservation whose pool write never happened is left to the controller, and listed).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { runCni, type CniOutcome } from '../../support/cni.ts';
import { controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { requireBinary } from '../../support/paths.ts';
import { cniConf, poolView } from './harness.ts';

const NODES = 10;
const ADDS_PER_NODE = 10;
const POOL = '10.85.0.0-24';

let ns: Namespace;

before(async () => {
  ns = await createNamespace(await controlPlane(), 'sigkill');
});

after(async () => {
  // Unset if before() failed: after hooks run all the same.
  await (ns as Namespace | undefined)?.cleanup();
});

function call(command: 'ADD' | 'DEL', node: string, pod: string, killAfterMs = 120_000): Promise<CniOutcome> {
  return runCni(
    requireBinary(),
    {
      command,
      containerId: `c-${pod}`,
      netns: `/var/run/netns/${pod}`,
      ifname: 'eth0',
      path: '/opt/cni/bin',
      args: `K8S_POD_NAMESPACE=default;K8S_POD_NAME=${pod}`,
    },
    cniConf(ns, node, { name: 'crashnet', range: '10.85.0.0/24' }),
    { timeoutMs: killAfterMs, extraEnv: { NODENAME: node } },
  );
}

interface Audit {
  /** address -> pod, for allocations whose pod did not get a result */
  readonly leakedAllocations: Map<string, string>;
  /** reservations whose address no pool allocation holds */
  readonly orphanReservations: Map<string, string>;
  /** addresses whose reservation names another pod than the allocation (a would-be duplicate) */
  readonly conflicts: string[];
}

/** What a crash can leave behind, found from the API objects alone. */
async function audit(succeeded: ReadonlyMap<string, string>): Promise<Audit> {
  const view = await poolView(ns, POOL);
  const podOf = (entry: Record<string, unknown>) => String(entry['podref']).replace(/^default\//, '');
  const leakedAllocations = new Map<string, string>();
  for (const [address, entry] of view?.allocations ?? []) {
    if (succeeded.get(podOf(entry)) !== address) leakedAllocations.set(address, podOf(entry));
  }
  const orphanReservations = new Map<string, string>();
  const conflicts: string[] = [];
  for (const orir of await ns.list('overlappingrangeipreservations')) {
    const address = (orir['metadata'] as { name: string }).name;
    const pod = (orir['spec'] as { podref: string }).podref.replace(/^default\//, '');
    const entry = view?.allocations.get(address);
    if (entry === undefined) orphanReservations.set(address, pod);
    else if (podOf(entry) !== pod) conflicts.push(`${address}: pool says ${podOf(entry)}, reservation says ${pod}`);
  }
  return { leakedAllocations, orphanReservations, conflicts };
}

test(
  `${NODES * ADDS_PER_NODE} ADDs SIGKILLed at random points: no duplicate, every leak listed, DELs clear the pool`,
  { timeout: 600_000 },
  async (t) => {
    const nodes = Array.from({ length: NODES }, (_, i) => `node-${i}`);
    // Calibration, also warming every node's cache: how long an ADD takes here, with this many nodes at once.
    let warm: number[] = [];
    for (const round of ['warm', 'warmer']) {
      warm = await Promise.all(
        nodes.map(async (node) => {
          const started = Date.now();
          const outcome = await call('ADD', node, `${node}-${round}`);
          assert.equal(outcome.code, 0, outcome.stdout);
          return Date.now() - started;
        }),
      );
    }
    const typical = [...warm].sort((a, b) => a - b)[Math.floor(warm.length / 2)] ?? 100;
    t.diagnostic(`a warm ADD takes ${typical} ms here; kills fall in 0-${Math.round(typical * 1.6)} ms`);
    const outcomes = new Map<string, CniOutcome>();
    await Promise.all(
      nodes.map(async (node) => {
        for (let i = 0; i < ADDS_PER_NODE; i++) {
          const pod = `${node}-p${i}`;
          outcomes.set(pod, await call('ADD', node, pod, 1 + Math.floor(Math.random() * typical * 1.6)));
        }
      }),
    );
    const succeeded = new Map<string, string>(); // pod -> address
    for (const [address, entry] of (await poolView(ns, POOL))?.allocations ?? []) {
      const pod = String(entry['podref']).replace(/^default\//, '');
      if (/-warm(er)?$/.test(pod)) succeeded.set(pod, address);
    }
    const unfinished: string[] = [];
    for (const [pod, outcome] of outcomes) {
      const ips = outcome.code === 0 ? (outcome.json?.['ips'] as Array<{ address: string }> | undefined) : undefined;
      const address = ips?.[0]?.address.split('/')[0];
      if (address !== undefined) succeeded.set(pod, address);
      else unfinished.push(pod);
    }
    t.diagnostic(`${succeeded.size} ADDs finished, ${unfinished.length} killed or failed`);
    const holders = new Map<string, string>();
    for (const [pod, address] of succeeded) {
      assert.equal(holders.get(address), undefined, `${address} handed to ${holders.get(address)} and ${pod}`);
      holders.set(address, pod);
    }
    const found = await audit(succeeded);
    assert.deepEqual(found.conflicts, []);
    for (const [address, pod] of [...found.leakedAllocations, ...found.orphanReservations]) {
      assert.ok(unfinished.includes(pod), `${address} leaked by ${pod}, whose ADD finished`);
    }
    t.diagnostic(
      `audit: leaked allocations ${[...found.leakedAllocations.keys()].join(' ') || 'none'}; ` +
        `orphan reservations ${[...found.orphanReservations.keys()].join(' ') || 'none'}`,
    );
    // Every finished ADD is in the pool, under its own pod.
    const view = await poolView(ns, POOL);
    for (const [pod, address] of succeeded) {
      assert.equal(String(view?.allocations.get(address)?.['podref']), `default/${pod}`);
    }

    // The runtime sends DEL for every ADD that did not report success.
    const dels = await Promise.all(unfinished.map((pod) => call('DEL', pod.replace(/-p\d+$/, ''), pod)));
    assert.deepEqual(
      dels.filter((d) => d.code !== 0).map((d) => d.stdout),
      [],
    );
    const after = await audit(succeeded);
    assert.deepEqual([...after.leakedAllocations], []);
    assert.deepEqual(after.conflicts, []);
    for (const address of after.orphanReservations.keys()) {
      assert.ok(
        found.orphanReservations.has(address) || found.leakedAllocations.has(address),
        `${address} was not listed before the DELs`,
      );
    }
    t.diagnostic(`left for the controller: ${[...after.orphanReservations.keys()].join(' ') || 'nothing'}`);

    // The pool still works: every node allocates again, past any lock a killed process left behind.
    const more = await Promise.all(nodes.map((node) => call('ADD', node, `${node}-again`)));
    assert.deepEqual(
      more.filter((o) => o.code !== 0).map((o) => o.stdout),
      [],
    );
    const fresh = more.map((o) => (o.json?.['ips'] as Array<{ address: string }>)[0]?.address.split('/')[0]);
    for (const address of fresh)
      assert.ok(address !== undefined && !holders.has(address) && !after.orphanReservations.has(address));
    assert.equal(new Set(fresh).size, NODES);
  },
);
