// Network namespaces the e2e tests create and always remove. Nothing here touches the root namespace: the
// "host" side of every test is itself a namespace of ours.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { debianCniDir } from './paths.ts';

/** Why e2e tests cannot run here, or undefined when they can. */
export function e2eSkipReason(): string | undefined {
  if (process.getuid?.() !== 0) return 'e2e tests need root (network namespaces); CI runs as root';
  if (!existsSync(`${debianCniDir}/bridge`))
    return `Debian containernetworking-plugins missing (${debianCniDir}/bridge)`;
  try {
    execFileSync('ip', ['-V'], { stdio: 'ignore' });
  } catch {
    return 'iproute2 (ip) is not installed';
  }
  return undefined;
}

export function ip(...args: string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8' });
}

export function netnsPath(name: string): string {
  return `/var/run/netns/${name}`;
}

export class Netns {
  readonly name: string;
  constructor(prefix: string) {
    this.name = `${prefix}-${randomBytes(3).toString('hex')}`;
    ip('netns', 'add', this.name);
    ip('-n', this.name, 'link', 'set', 'lo', 'up');
  }
  get path(): string {
    return netnsPath(this.name);
  }
  exec(...args: string[]): string {
    return execFileSync('ip', ['netns', 'exec', this.name, ...args], { encoding: 'utf8' });
  }
  /** Addresses (CIDR text) on `dev` inside this namespace. */
  addresses(dev: string): string[] {
    const out = JSON.parse(ip('-j', '-n', this.name, 'addr', 'show', 'dev', dev)) as Array<{
      addr_info: Array<{ local: string; prefixlen: number; scope: string }>;
    }>;
    return out.flatMap((l) => l.addr_info.filter((a) => a.scope !== 'link').map((a) => `${a.local}/${a.prefixlen}`));
  }
  hasLink(dev: string): boolean {
    try {
      ip('-n', this.name, 'link', 'show', 'dev', dev);
      return true;
    } catch {
      return false;
    }
  }
  delete(): void {
    try {
      ip('netns', 'delete', this.name);
    } catch {
      // already gone: the test may delete it on purpose
    }
  }
}
