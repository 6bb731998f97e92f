// The node agent keeps one keep-alive agent per server and TLS identity across calls (connection-pool.ts); a plugin
// process, whose pool keeps none, gets a fresh agent per call that release destroys.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent } from 'node:https';
import { ConnectionPool } from '../../../src/kube/connection-pool.ts';

const make = (): Agent => new Agent({ keepAlive: true });

test("a pool that keeps nothing (a plugin process's) gives every call its own agent, and release destroys it", () => {
  const pool = new ConnectionPool({ keep: false });
  const a = pool.agentFor('https://api:6443', { ca: Buffer.from('ca') }, make);
  const b = pool.agentFor('https://api:6443', { ca: Buffer.from('ca') }, make);
  assert.notEqual(a, b);
  let gone = false;
  a.destroy = () => void (gone = true);
  pool.release(a);
  assert.equal(gone, true);
  assert.equal(pool.keptAgents(), 0);
});

test("in a keeping pool (the node agent's) the same server and TLS material share one agent that release keeps; other material gets another", () => {
  const pool = new ConnectionPool({ keep: true });
  const a = pool.agentFor('https://api:6443', { ca: Buffer.from('ca-1'), servername: 'api' }, make);
  const again = pool.agentFor('https://api:6443', { ca: Buffer.from('ca-1'), servername: 'api' }, make);
  assert.equal(a, again);
  let gone = false;
  a.destroy = () => void (gone = true);
  pool.release(a);
  assert.equal(gone, false, 'a kept agent was destroyed at the end of a call');
  const rotatedCa = pool.agentFor('https://api:6443', { ca: Buffer.from('ca-2'), servername: 'api' }, make);
  assert.notEqual(rotatedCa, a);
  const otherServer = pool.agentFor('https://other:6443', { ca: Buffer.from('ca-1'), servername: 'api' }, make);
  assert.notEqual(otherServer, a);
  assert.equal(pool.keptAgents(), 3);
});

test('past 8 identities the least recently used agent is evicted and destroyed', () => {
  const pool = new ConnectionPool({ keep: true });
  const first = pool.agentFor('https://evict:1', {}, make);
  let gone = false;
  first.destroy = () => void (gone = true);
  for (let i = 2; i <= 12; i++) pool.agentFor(`https://evict:${i}`, {}, make);
  assert.equal(gone, true);
  assert.equal(pool.keptAgents(), 8);
});

test("pools are separate: the node agent's keeping pool neither makes another pool keep nor lends it its agents", () => {
  const agents = new ConnectionPool({ keep: true });
  const plugin = new ConnectionPool({ keep: false });
  const tls = { ca: Buffer.from('ca-1'), servername: 'api' };
  const kept = agents.agentFor('https://api:6443', tls, make);
  const own = plugin.agentFor('https://api:6443', tls, make);
  assert.notEqual(own, kept);
  let gone = false;
  own.destroy = () => void (gone = true);
  plugin.release(own);
  assert.equal(gone, true, 'a call through a pool that keeps nothing ends its connection');
  const other = new ConnectionPool({ keep: true });
  assert.notEqual(other.agentFor('https://api:6443', tls, make), kept, 'another host keeps its own agents');
  assert.equal(agents.keptAgents(), 1);
  assert.equal(other.keptAgents(), 1);
});
