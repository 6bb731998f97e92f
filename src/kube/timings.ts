// Where a Kubernetes-store CNI call spends its time, printed to stderr at exit when HEREABOUTS_TIMINGS=1 (a
// benchmark aid: scripts/bench/peer.ts reads it). Each mark has the wall time since the process started and the
// process's CPU time (all threads) at that moment; the tail after the last mark is the cache write, the result and
// the exit.
import { performance } from 'node:perf_hooks';

interface Mark {
  readonly label: string;
  readonly wallMs: number;
  readonly cpuMs: number;
}

const enabled = process.env['HEREABOUTS_TIMINGS'] === '1';
const marks: Mark[] = [];

/** Records `label` (e.g. "kubeconfig (cache hit)") as having ended now. */
export function mark(label: string): void {
  if (!enabled) return;
  const cpu = process.cpuUsage();
  marks.push({ label, wallMs: performance.now(), cpuMs: (cpu.user + cpu.system) / 1000 });
  if (marks.length === 1) process.once('exit', report);
}

export const timingsEnabled = enabled;

function report(): void {
  mark('cache write, result, exit');
  let last = { wallMs: 0, cpuMs: 0 };
  const parts = marks.map((m) => {
    const part = { label: m.label, wallMs: round(m.wallMs - last.wallMs), cpuMs: round(m.cpuMs - last.cpuMs) };
    last = m;
    return part;
  });
  process.stderr.write(`hereabouts-timings ${JSON.stringify(parts)}\n`);
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}
