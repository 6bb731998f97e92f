// Two `hereabouts controller` processes on one Lease: only the leader acts; when it is killed the other takes over
// within the lease duration; a leader whose lease is taken stops acting at once; SIGTERM hands the lease back.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api, apiRequest, controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { allocation, createPool, eventually, offsets, sleep, startController, type Running } from './harness.ts';

const LEASE = ['--lease-duration', '3s', '--renew-deadline', '2s', '--retry-period', '300ms', '--reconcile-interval', '1s'];
const leasePath = (ns: Namespace) => `/apis/coordination.k8s.io/v1/namespaces/${ns.name}/leases/hereabouts-controller`;
const holder = async (ns: Namespace) => ((await apiRequest(ns.cp, 'GET', leasePath(ns))).body as { spec?: { holderIdentity?: string } }).spec?.holderIdentity ?? '';
const acted = (c: Running) => c.lines().some((l) => / pass done/.test(l.msg));

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

  test('only the leader acts; killed, the other replica takes over within the lease duration', async () => {
    const a = start('replica-a');
    await a.waitForLine((l) => l.msg.startsWith('leading:'), 10_000);
    const b = start('replica-b');
    await b.waitForLine((l) => l.msg === 'controller started', 10_000);
    await createPool(ns, '10.83.0.0-24', '10.83.0.0/24', { '1': allocation(ns, 'ghost-1') });
    assert.ok(await eventually(async () => (await offsets(ns, '10.83.0.0-24')).length === 0, 5000), a.log());
    await sleep(1500); // several reconcile intervals of b
    assert.equal(await holder(ns), 'replica-a');
    assert.ok(acted(a));
    assert.ok(!acted(b), b.log());

    a.child.kill('SIGKILL');
    const killedAt = Date.now();
    await b.waitForLine((l) => l.msg.startsWith('leading:'), 10_000);
    const took = Date.now() - killedAt;
    // A candidate counts the lease duration from when it last saw the record change (client-go's rule, immune to
    // clock skew) and tries every retry period with up to 120 % jitter: it sees the last renewal at most 660 ms late
    // and notices the expiry at most 660 ms late, plus a request or two.
    assert.ok(took <= 3000 + 2 * 660 + 700, `took over after ${took} ms with a 3 s lease`);
    await createPool(ns, '10.83.1.0-24', '10.83.1.0/24', { '1': allocation(ns, 'ghost-2') });
    assert.ok(await eventually(async () => (await offsets(ns, '10.83.1.0-24')).length === 0, 5000), b.log());
    assert.equal(await holder(ns), 'replica-b');
    assert.equal(await b.stop(), 0);
    assert.equal(await holder(ns), '', 'SIGTERM hands the lease back');
  });

  test('a leader whose lease was taken over stops acting at once', async () => {
    const c = start('replica-c');
    await c.waitForLine((l) => l.msg.startsWith('leading:'), 10_000);
    // Another holder renews the lease from now on (as a replica on the other side of a partition would).
    const steal = async () => {
      const lease = (await api(ns.cp, 'GET', leasePath(ns))) as { spec: Record<string, unknown> };
      lease.spec['holderIdentity'] = 'intruder';
      lease.spec['renewTime'] = new Date().toISOString().replace(/Z$/, '000Z'); // MicroTime
      await api(ns.cp, 'PUT', leasePath(ns), lease);
    };
    await steal();
    await c.waitForLine((l) => l.msg.startsWith('not leading:'), 5000);
    const renewing = setInterval(() => void steal().catch(() => undefined), 500);
    try {
      await createPool(ns, '10.83.2.0-24', '10.83.2.0/24', { '1': allocation(ns, 'ghost-3') });
      await sleep(2500);
      assert.deepEqual(await offsets(ns, '10.83.2.0-24'), ['1'], c.log());
    } finally {
      clearInterval(renewing);
    }
    assert.equal(await c.stop(), 0);
    assert.equal(await holder(ns), 'intruder', 'a replica that does not hold the lease leaves it alone on SIGTERM');
  });
});
