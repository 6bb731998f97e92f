// CPU time of running processes as the kernel accounts it (/proc/<pid>/stat: user + system, all threads), for the
// benchmarks that measure processes they did not start themselves (the API server, etcd, node agents).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The resolution of these figures: one clock tick. */
export const TICK_MS = 1000 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

/** CPU time the process has used so far, in ms. */
export function processCpuMs(pid: number | string): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
    .replace(/^.*\) /s, '')
    .split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS; // utime, stime
}

/** kube-apiserver + etcd (or only one of them) of a control plane started by scripts/control-plane/start.sh into `dir`. */
export function controlPlaneCpuMs(dir: string, only?: 'APISERVER_PID' | 'ETCD_PID'): number {
  const env = readFileSync(join(dir, 'env'), 'utf8');
  let total = 0;
  for (const key of only === undefined ? ['APISERVER_PID', 'ETCD_PID'] : [only]) {
    const pid = new RegExp(`^export ${key}=(\\d+)$`, 'm').exec(env)?.[1];
    if (pid === undefined) throw new Error(`${dir}/env names no ${key}`);
    total += processCpuMs(pid);
  }
  return total;
}
