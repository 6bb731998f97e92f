// Two `hereabouts controller` processes on one Lease: only the leader acts; when it is killed the other takes over
// (a lease transition); a leader whose lease is taken stops acting at once; SIGTERM hands the lease back. Nothing
// here sleeps for a while and then asserts that nothing happened: every "did not act" waits first for the replica's
// own log to show that several passes came and were skipped.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api, apiRequest, controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { allocation, createPool, offsets, startController, type LogLine, type Running } from './harness.ts';

const LEASE = [
  '--lease-duration',
  '3s',
  '--renew-deadline',
  '2s',
  '--retry-period',
  '300ms',
  '--reconcile-interval',
  '1s',
  '--log-level',
  'debug',
];
const leasePath = (ns: Namespace) => `/apis/coordination.k8s.io/v1/namespaces/${ns.name}/leases/hereabouts-controller`;
type LeaseSpec = { holderIdentity?: string; leaseTransitions?: number };
const lease = async (ns: Namespace) =>
  ((await apiRequest(ns.cp, 'GET', leasePath(ns))).body as { spec?: LeaseSpec }).spec ?? {};
const passDone = (l: LogLine) => / pass done/.test(l.msg);
const skipped = (l: LogLine) => l.msg === 'full pass skipped: not leading';
/** Lines numbered after `n` (the pass counter of the log lines). */
const after_ = (n: number) => (l: LogLine) => typeof l['n'] === 'number' && l['n'] > n;
const lastPass = (c: Running) => Math.max(0, ...c.lines().map((l) => (typeof l['n'] === 'number' ? l['n'] : 0)));

describe('controller leader election', () => {
  let ns: Namespace;
  const running: Running[] = [];
  const start = (identity: string) => {
    const c = startController(ns, '--identity', identity, ...LEASE);
    running.push(c);
    return c;
  };
  before(async () => {
    ns = await createNamespace(await controlPlane(), 'lead');
  });
  after(async () => {
    for (const c of running) c.child.kill('SIGKILL');
    await ns.cleanup();
  });

  test('only the leader acts; killed, the other replica takes over (a lease transition) and acts', async () => {
    const a = start('replica-a');
    await a.waitForLine((l) => l.msg.startsWith('leading:'), 20_000);
    const b = start('replica-b');
    await b.waitForLine((l) => l.msg === 'controller started', 20_000);
    await createPool(ns, '10.83.0.0-24', '10.83.0.0/24', { '1': allocation(ns, 'ghost-1') });
    await a.waitForLine(
      (l) => l.msg === `released 10.83.0.1 of ${ns.name}/ghost-1 from IPPool 10.83.0.0-24: pod-gone`,
      20_000,
    );
    // b's own passes came (three after the release) and were skipped: it did not act because it did not lead.
    const from = lastPass(b);
    await b.waitForLines((l) => skipped(l) && after_(from)(l), 3, 20_000);
    assert.deepEqual(await offsets(ns, '10.83.0.0-24'), []);
    assert.equal((await lease(ns)).holderIdentity, 'replica-a');
    assert.ok(!b.lines().some(passDone), b.log());
    const transitions = (await lease(ns)).leaseTransitions ?? 0;

    a.child.kill('SIGKILL');
    await b.waitForLine((l) => l.msg.startsWith('leading:'), 30_000);
    const taken = await lease(ns);
    assert.equal(taken.holderIdentity, 'replica-b');
    assert.equal(taken.leaseTransitions, transitions + 1, 'one transition, from a to b');
    await createPool(ns, '10.83.1.0-24', '10.83.1.0/24', { '1': allocation(ns, 'ghost-2') });
    await b.waitForLine(
      (l) => l.msg === `released 10.83.1.1 of ${ns.name}/ghost-2 from IPPool 10.83.1.0-24: pod-gone`,
      20_000,
    );
    assert.equal(await b.stop(), 0);
    assert.equal((await lease(ns)).holderIdentity, '', 'SIGTERM hands the lease back');
  });

  test('a leader whose lease was taken over stops acting at once', async () => {
    const c = start('replica-c');
    await c.waitForLine((l) => l.msg.startsWith('leading:'), 20_000);
    // Another holder renews the lease from now on (as a replica on the other side of a partition would).
    const steal = async () => {
      const current = (await api(ns.cp, 'GET', leasePath(ns))) as { spec: Record<string, unknown> };
      current.spec['holderIdentity'] = 'intruder';
      current.spec['renewTime'] = new Date().toISOString().replace(/Z$/, '000Z'); // MicroTime
      await api(ns.cp, 'PUT', leasePath(ns), current);
    };
    await steal();
    await c.waitForLine((l) => l.msg.startsWith('not leading:'), 20_000);
    const renewing = setInterval(() => void steal().catch(() => undefined), 500);
    try {
      await createPool(ns, '10.83.2.0-24', '10.83.2.0/24', { '1': allocation(ns, 'ghost-3') });
      const from = lastPass(c);
      await c.waitForLines((l) => skipped(l) && after_(from)(l), 3, 20_000);
      assert.deepEqual(await offsets(ns, '10.83.2.0-24'), ['1'], c.log());
      assert.ok(!c.lines().some((l) => passDone(l) && after_(from)(l)), c.log());
    } finally {
      clearInterval(renewing);
    }
    assert.equal(await c.stop(), 0);
    assert.equal(
      (await lease(ns)).holderIdentity,
      'intruder',
      'a replica that does not hold the lease leaves it alone on SIGTERM',
    );
  });
});
