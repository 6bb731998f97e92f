// CNI plugin mode: read env + stdin once, parse and validate everything up front, open the store, run one verb,
// print one JSON document. Nothing is written before the request has been fully validated.
import { parseNetworkConfig } from '../config/parse.ts';
import type { NetworkConfig } from '../config/types.ts';
import { openStore, type StoreHost } from '../store/open.ts';
import type { Store } from '../store/store.ts';
import { recordCall } from './call-stats.ts';
import { readCniEnv, type CniEnv } from './env.ts';
import { createLogger, type Logger } from '../log/logger.ts';
import { errorJson, writeError, writeResult, writeSuccess, type OutputOptions } from './output.ts';
import { decodeRequest } from './stdin.ts';
import { readStdinFd } from './stdin-fd.ts';
import { bestEffortVersion, negotiate, versionInfo, type CniVersion } from './version.ts';
import type { VerbContext } from './verbs/context.ts';

/** The process's environment, stdin and outputs; tests replace them to run many requests in one process. */
export interface PluginIO {
  readonly env?: NodeJS.ProcessEnv;
  /** The request bytes, or a function that returns them (or throws what reading them threw). */
  readonly stdin?: Buffer | (() => Buffer);
  /** stdout (the one JSON document). */
  readonly stdout?: (text: string) => void;
  /** stderr (log lines when there is no log_file). */
  readonly stderr?: (text: string) => void;
}

/** `host`: what a long-lived host (the node agent) keeps across the calls it runs; a plugin process passes none. */
export async function runPlugin(io: PluginIO = {}, host?: StoreHost): Promise<number> {
  const started = process.hrtime.bigint();
  let outcome: 'ok' | number = 'ok';
  let version: CniVersion | undefined;
  let request: Record<string, unknown> | undefined;
  const sinks = io.stderr === undefined ? {} : { stderr: io.stderr };
  const out = io.stdout === undefined ? {} : { write: io.stdout };
  let logger: Logger = createLogger({ level: 'error', ...sinks });
  let store: Store | undefined;
  const processEnv = io.env ?? process.env;
  try {
    const env = readCniEnv(processEnv);
    if (env.verb === 'VERSION') return await answerVersion(io);
    request = decodeRequest(stdinOf(io) ?? readStdinFd());
    version = negotiate(request, env.verb);
    const config = parseNetworkConfig(request, {
      verb: env.verb,
      cniVersion: version,
      cniArgs: 'args' in env ? env.args : undefined,
      env: processEnv,
    });
    const logTo = {
      ...(config.ipam.logFile === undefined ? {} : { file: config.ipam.logFile }),
      context: describe(env),
      ...sinks,
    };
    logger = createLogger({ ...logTo, level: config.ipam.logLevel });
    // Whatever log_level says: an operator must be able to find out why a NAD's log_file is not followed.
    const loud = createLogger({ ...logTo, level: 'debug' });
    for (const why of config.ignored ?? []) loud.warning(why);
    for (const note of config.notes ?? []) logger.debug(note);
    for (const warning of config.warnings) logger.warning(warning);
    store = await openStore(config, { log: logger, env: processEnv, ...(host === undefined ? {} : { host }) });
    return await runVerb({ env, config, store, logger, version }, out);
  } catch (err) {
    const cniVersion = version ?? bestEffortVersion(request);
    const { code, msg } = errorJson(err, cniVersion);
    outcome = code;
    logger.error(`failed with code ${code}: ${msg}`);
    // Stack traces are for whoever debugs us (log_level debug), never for stdout or a routine error log.
    return writeError(err, cniVersion, { log: (m) => logger.debug(m), ...out });
  } finally {
    try {
      await store?.close();
    } finally {
      // Every call, whether this process hosts one or many, is counted once, after its answer is final.
      const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
      const why = recordCall(
        { verb: processEnv['CNI_COMMAND'], outcome, network: request?.['name'], durationMs },
        processEnv,
      );
      if (why !== undefined) logger.debug(why);
    }
  }
}

async function runVerb(ctx: VerbContext & { env: CniEnv }, out: OutputOptions): Promise<number> {
  const { env } = ctx;
  switch (env.verb) {
    case 'ADD': {
      const { cmdAdd } = await import('./verbs/add.ts');
      return writeSuccess('ADD', await cmdAdd({ ...ctx, env }), out);
    }
    case 'DEL': {
      const { cmdDel } = await import('./verbs/del.ts');
      await cmdDel({ ...ctx, env });
      return writeSuccess('DEL');
    }
    case 'CHECK': {
      const { cmdCheck } = await import('./verbs/check.ts');
      await cmdCheck({ ...ctx, env });
      return writeSuccess('CHECK');
    }
    case 'GC': {
      const { cmdGc } = await import('./verbs/gc.ts');
      await cmdGc(ctx);
      return writeSuccess('GC');
    }
    case 'STATUS': {
      const { cmdStatus } = await import('./verbs/status.ts');
      await cmdStatus(ctx);
      return writeSuccess('STATUS');
    }
    case 'VERSION':
      return answerVersion({ ...(out.write === undefined ? {} : { stdout: out.write }) });
  }
}

/** VERSION may come without stdin, or with one that never closes: read briefly and echo what was asked. */
async function answerVersion(io: PluginIO): Promise<number> {
  let request: unknown;
  try {
    request = decodeRequest(stdinOf(io) ?? readStdinFd({ timeoutMs: 100 }));
  } catch {
    request = undefined; // no (valid) request: report the latest version, as the spec allows
  }
  return writeResult(versionInfo(request), io.stdout === undefined ? {} : { write: io.stdout });
}

function stdinOf(io: PluginIO): Buffer | undefined {
  return typeof io.stdin === 'function' ? io.stdin() : io.stdin;
}

function describe(env: CniEnv): { verb: string; container?: string; ifname?: string } {
  return 'containerId' in env ? { verb: env.verb, container: env.containerId, ifname: env.ifname } : { verb: env.verb };
}

export type { NetworkConfig };
