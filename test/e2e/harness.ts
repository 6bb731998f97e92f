// Shared set-up for the end-to-end suites: a CNI_PATH holding our executable under both type names, a
// temporary data_dir, and a "host" namespace in which Debian's plugins run (the root namespace is never touched:
// close() checks the machine's forwarding sysctls, which the bridge plugin's isGateway turns on where it runs).
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCni, type CniOutcome } from '../support/cni.ts';
import { readForwarding, restoreForwarding } from '../support/host-sysctls.ts';
import { Netns } from '../support/netns.ts';
import { debianCniDir, requireBinary } from '../support/paths.ts';

export interface PodCall {
  readonly containerId: string;
  readonly netns: string;
  readonly ifname?: string;
  readonly args?: string;
}

export class E2eWorld {
  readonly dir = mkdtempSync(join(tmpdir(), 'hab-e2e-'));
  readonly binDir = join(this.dir, 'bin');
  readonly dataDir = join(this.dir, 'data');
  /** The machine's forwarding sysctls before the suite: close() puts back any that changed, then fails. */
  private readonly forwarding = readForwarding();
  readonly host = new Netns('hab-host');
  private readonly pods: Netns[] = [];

  constructor() {
    mkdirSync(this.binDir);
    const bin = requireBinary();
    // bridge/macvlan find the IPAM plugin by its `type` in CNI_PATH: serve both names.
    for (const name of ['hereabouts', 'whereabouts']) symlinkSync(bin, join(this.binDir, name));
  }

  get cniPath(): string {
    return `${this.binDir}:${debianCniDir}`;
  }

  newPod(): Netns {
    const ns = new Netns('hab-pod');
    this.pods.push(ns);
    return ns;
  }

  /** Runs one of Debian's plugins inside the host namespace, as a runtime would. */
  plugin(type: string, command: 'ADD' | 'DEL' | 'CHECK', pod: PodCall, conf: unknown): Promise<CniOutcome> {
    return runCni(
      join(debianCniDir, type),
      {
        command,
        containerId: pod.containerId,
        netns: pod.netns,
        ifname: pod.ifname ?? 'eth0',
        path: this.cniPath,
        ...(pod.args === undefined ? {} : { args: pod.args }),
      },
      conf,
      { inNetns: this.host.name },
    );
  }

  close(): void {
    for (const p of this.pods) p.delete();
    this.host.delete();
    rmSync(this.dir, { recursive: true, force: true });
    const changed = restoreForwarding(this.forwarding);
    assert.deepEqual(
      changed,
      [],
      `the suite changed the machine's forwarding sysctls (now put back): ${changed.join(', ')}`,
    );
  }
}

export function ipsOf(result: Record<string, unknown> | undefined): string[] {
  const ips = (result?.['ips'] ?? []) as Array<{ address: string }>;
  return ips.map((i) => i.address);
}
