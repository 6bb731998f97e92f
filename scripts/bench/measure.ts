// Wall-clock timing of short-lived processes. Cases run interleaved (one sample of each per round) so that a
// machine that slows down or speeds up during the run affects every case alike; figures are medians.
import { spawnSync } from 'node:child_process';

export interface Command {
  readonly file: string;
  readonly args?: readonly string[];
  /** The whole environment of the process (nothing is inherited). */
  readonly env?: Readonly<Record<string, string>>;
  readonly input?: string;
}

export interface Case {
  readonly label: string;
  /** The commands of one sample, run in order and timed together; `round` numbers samples from 0. */
  readonly sample: (round: number) => readonly Command[];
}

export interface Summary {
  readonly label: string;
  readonly median: number;
  readonly p10: number;
  readonly p90: number;
  readonly runs: number;
}

/** Runs one command; any exit status but 0, or anything on stderr, is an error that names the command. */
export function runChecked(command: Command): string {
  const result = spawnSync(command.file, command.args ?? [], {
    env: { ...command.env },
    input: command.input ?? '',
    encoding: 'utf8',
    timeout: 60_000,
  });
  if (result.error !== undefined) throw result.error;
  if (result.status !== 0 || result.stderr !== '') {
    const shown = [command.file, ...(command.args ?? [])].join(' ');
    throw new Error(`${shown} exited ${result.status ?? result.signal}: ${result.stderr}${result.stdout}`.trim());
  }
  return result.stdout;
}

export function measure(cases: readonly Case[], options: { runs: number; warmup: number }): Summary[] {
  const samples = cases.map((): number[] => []);
  for (let round = 0; round < options.warmup + options.runs; round += 1) {
    cases.forEach((c, i) => {
      const commands = c.sample(round);
      const started = process.hrtime.bigint();
      for (const command of commands) runChecked(command);
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      if (round >= options.warmup) samples[i]?.push(ms);
    });
  }
  return cases.map((c, i) => summarize(c.label, samples[i] ?? []));
}

function summarize(label: string, values: readonly number[]): Summary {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
  return { label, median: at(0.5), p10: at(0.1), p90: at(0.9), runs: sorted.length };
}
