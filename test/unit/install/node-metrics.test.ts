// The node's CNI metrics: network label values are tenant-chosen, so their number is capped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NodeMetrics, OTHER_NETWORK } from '../../../src/install/node-metrics.ts';

test('after maxNetworks distinct networks, further networks are counted as "_other"', async () => {
  const metrics = new NodeMetrics({ maxNetworks: 2 });
  for (const network of ['a', 'b', 'c', 'd', 'a'])
    metrics.record({ verb: 'ADD', outcome: 'ok', micros: 1500, network });
  const text = await metrics.registry.metrics();
  const count = (network: string): number =>
    Number(
      new RegExp(`^hereabouts_cni_requests_total\\{verb="ADD",code="ok",network="${network}"\\} (\\d+)$`, 'm').exec(
        text,
      )?.[1],
    );
  assert.equal(count('a'), 2);
  assert.equal(count('b'), 1);
  assert.equal(count(OTHER_NETWORK), 2);
  assert.doesNotMatch(text, /network="c"|network="d"/);
  assert.match(text, /^hereabouts_cni_request_duration_seconds_bucket\{le="0.0025",verb="ADD",network="a"\} 2$/m);
});

test("the node alerts' gauges: agent enabled, and warm sets off for want of their journal only while they say so", async () => {
  const metrics = new NodeMetrics({ maxNetworks: 2 });
  const value = async (name: string): Promise<number> =>
    Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(await metrics.registry.metrics())?.[1]);
  metrics.agentEnabled(false);
  assert.equal(await value('hereabouts_node_agent_enabled'), 0, '--agent-socket ""');
  metrics.agentEnabled(true);
  assert.equal(await value('hereabouts_node_agent_enabled'), 1);
  assert.equal(await value('hereabouts_node_warm_journal_off'), 0, 'no warm sets configured: nothing is off');
  const stats = {
    warm: 0,
    pending: 0,
    handedOut: 0,
    released: 0,
    groupWrites: 0,
    groupedEntries: 0,
    groupWriteMs: 0,
    groupWriteFailures: 0,
    lost: 0,
    synchronous: 0,
    journalWrites: 0,
    journalMs: 0,
    journalOff: 1,
  };
  metrics.warmFrom(() => stats);
  assert.equal(await value('hereabouts_node_warm_journal_off'), 1, 'the journal could not be opened');
  metrics.warmFrom(() => ({ ...stats, journalOff: 0 }));
  assert.equal(await value('hereabouts_node_warm_journal_off'), 0);
});
