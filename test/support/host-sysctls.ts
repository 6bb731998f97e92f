// The forwarding sysctls of the network namespace this process runs in (for the demo and the tests: the host's).
// Debian's bridge plugin with `isGateway: true` writes net.ipv4.ip_forward and net.ipv6.conf.all.forwarding = 1
// in the namespace it runs in, and the kernel carries each to `default` and to every interface there: a machine that
// was not a router becomes one. The demo and the e2e tests run the plugin in a namespace of their own, so the host's
// values never change; these helpers check that, and put back anything that did change.
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const procSys = '/proc/sys';

/** Paths under /proc/sys (net/ipv4/ip_forward, ...) to values, for every forwarding switch of this namespace. */
export type Forwarding = ReadonlyMap<string, string>;

/**
 * net.ipv4.ip_forward, net/ipv{4,6}/conf/{all,default,<each interface>}/forwarding: what `isGateway` turns on. IPv6
 * is left out when the kernel has it disabled (no /proc/sys/net/ipv6).
 */
export function readForwarding(): Forwarding {
  const values = new Map<string, string>();
  const read = (name: string): void => {
    const file = join(procSys, name);
    if (existsSync(file)) values.set(name, readFileSync(file, 'utf8').trim());
  };
  read('net/ipv4/ip_forward');
  for (const family of ['ipv4', 'ipv6']) {
    const conf = join(procSys, 'net', family, 'conf');
    if (!existsSync(conf)) continue;
    // all and default first: writing them rewrites every interface, so they are also put back first.
    const devices = readdirSync(conf)
      .filter((d) => d !== 'all' && d !== 'default')
      .sort();
    for (const dev of ['all', 'default', ...devices]) read(`net/${family}/conf/${dev}/forwarding`);
  }
  return values;
}

/** "name: before -> now" for each switch present both times whose value differs (interfaces come and go). */
export function forwardingChanges(before: Forwarding, now: Forwarding = readForwarding()): string[] {
  const changes: string[] = [];
  for (const [name, was] of before) {
    const is = now.get(name);
    if (is !== undefined && is !== was) changes.push(`${name}: ${was} -> ${is}`);
  }
  return changes;
}

/**
 * Puts back every switch that differs from `before`, global ones first (writing `all` or ip_forward rewrites each
 * interface), then the interfaces' own; returns what had changed, empty when nothing had. Needs root to write.
 */
export function restoreForwarding(before: Forwarding): string[] {
  const changes = forwardingChanges(before);
  if (changes.length === 0) return changes;
  for (const [name, was] of before) {
    const file = join(procSys, name);
    if (!existsSync(file)) continue;
    if (readFileSync(file, 'utf8').trim() !== was) writeFileSync(file, `${was}\n`);
  }
  return changes;
}
