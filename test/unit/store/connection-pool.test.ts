// The node agent keeps one keep-alive agent per server and TLS identity across calls (connection-pool.ts); a plugin
// process, which never calls keepConnections(), gets a fresh agent per call that release destroys.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent } from 'node:https';
import { agentFor, keepConnections, keptAgents, releaseAgent } from '../../../src/kube/connection-pool.ts';

const make = (): Agent => new Agent({ keepAlive: true });

test('without keepConnections every call gets its own agent, and release destroys it', () => {
  const a = agentFor('https://api:6443', { ca: Buffer.from('ca') }, make);
  const b = agentFor('https://api:6443', { ca: Buffer.from('ca') }, make);
  assert.notEqual(a, b);
  let gone = false;
  a.destroy = () => void (gone = true);
  releaseAgent(a);
  assert.equal(gone, true);
  assert.equal(keptAgents(), 0);
});

test('with keepConnections the same server and TLS material share one agent that release keeps; other material gets another', () => {
  keepConnections();
  const a = agentFor('https://api:6443', { ca: Buffer.from('ca-1'), servername: 'api' }, make);
  const again = agentFor('https://api:6443', { ca: Buffer.from('ca-1'), servername: 'api' }, make);
  assert.equal(a, again);
  let gone = false;
  a.destroy = () => void (gone = true);
  releaseAgent(a);
  assert.equal(gone, false, 'a kept agent was destroyed at the end of a call');
  const rotatedCa = agentFor('https://api:6443', { ca: Buffer.from('ca-2'), servername: 'api' }, make);
  assert.notEqual(rotatedCa, a);
  const otherServer = agentFor('https://other:6443', { ca: Buffer.from('ca-1'), servername: 'api' }, make);
  assert.notEqual(otherServer, a);
  assert.equal(keptAgents(), 3);
});

test('past 8 identities the least recently used agent is evicted and destroyed', () => {
  keepConnections();
  const first = agentFor('https://evict:1', {}, make);
  let gone = false;
  first.destroy = () => void (gone = true);
  for (let i = 2; i <= 12; i++) agentFor(`https://evict:${i}`, {}, make);
  assert.equal(gone, true);
  assert.equal(keptAgents(), 8);
});
