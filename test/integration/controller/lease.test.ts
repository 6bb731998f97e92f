// The Lease elector in process against the real API server, with the wall clock stepped (NTP, a resumed VM): leading
// is timed on the monotonic clock, so a step forward does not make a healthy leader give up, and a step backward does
// not keep a leader that cannot renew acting past its renew deadline.
import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { apiRequest, controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { ApiClient, ApiUnreachableError, type ApiRequest, type ApiResponse } from '../../../src/kube/api.ts';
import { loadEndpoint } from '../../../src/kube/kubeconfig.ts';
import { LeaderElector } from '../../../src/controller/runtime/lease.ts';
import { jsonLog } from '../../../src/log/json-log.ts';

/** An ApiClient that can be cut off from the server (as a partition would). */
class Cuttable extends ApiClient {
  cut = false;
  override send(req: ApiRequest, options?: { timeoutMs?: number }): Promise<ApiResponse> {
    if (this.cut)
      return Promise.reject(
        new ApiUnreachableError(`${req.method} ${req.path}: cut off by the test`, { ambiguous: false }),
      );
    return super.send(req, options);
  }
}

const realNow = Date.now;

describe('lease timing on the monotonic clock', () => {
  let ns: Namespace;
  let client: Cuttable;
  const electors: LeaderElector[] = [];
  before(async () => {
    ns = await createNamespace(await controlPlane(), 'lease');
    client = new Cuttable(await loadEndpoint(ns.kubeconfig), { timeoutMs: 10_000 });
  });
  afterEach(async () => {
    Date.now = realNow;
    client.cut = false;
    for (const e of electors.splice(0)) await e.stop();
  });
  after(async () => {
    client.close();
    await ns.cleanup();
  });

  /** An elector on its own Lease, recording every change of leadership and every renewal it sees. */
  const elect = (name: string) => {
    const changes: boolean[] = [];
    let waiter: (() => void) | undefined;
    const elector = new LeaderElector(client, {
      namespace: ns.name,
      name,
      identity: `${name}-id`,
      leaseDurationMs: 3000,
      renewDeadlineMs: 2000,
      retryPeriodMs: 300,
      log: jsonLog({ level: 'error' }),
      onChange: (leading) => {
        changes.push(leading);
        waiter?.();
      },
    });
    electors.push(elector);
    elector.start();
    const change = () => new Promise<void>((resolve) => (waiter = resolve));
    return { elector, changes, change };
  };
  const renewTimes = async (name: string, count: number): Promise<void> => {
    const seen = new Set<string>();
    while (seen.size < count) {
      const lease = (
        await apiRequest(ns.cp, 'GET', `/apis/coordination.k8s.io/v1/namespaces/${ns.name}/leases/${name}`)
      ).body as { metadata: { resourceVersion: string } };
      seen.add(lease.metadata.resourceVersion);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  test('a wall clock stepped an hour forward does not make a renewing leader give up', async () => {
    const { elector, changes, change } = elect('forward');
    await change();
    assert.deepEqual(changes, [true]);
    Date.now = () => realNow() + 3_600_000;
    await renewTimes('forward', 5); // several renewals, each followed by the elector's own check
    assert.ok(elector.leading);
    assert.deepEqual(changes, [true], 'leadership never flapped');
  });

  test('a wall clock stepped an hour back does not keep a leader that cannot renew', async () => {
    const { elector, changes, change } = elect('backward');
    await change();
    Date.now = () => realNow() - 3_600_000;
    client.cut = true;
    const lost = change();
    const timeout = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 15_000).unref());
    assert.notEqual(
      await Promise.race([lost, timeout]),
      'timeout',
      'still leading 15 s after renewals stopped (renew deadline 2 s)',
    );
    assert.deepEqual(changes, [true, false]);
    assert.equal(elector.leading, false);
  });
});
