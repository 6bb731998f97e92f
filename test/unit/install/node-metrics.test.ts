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
