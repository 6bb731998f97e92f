// `hereabouts controller`: leader-elected orphan and reservation cleanup, node-slice assignment and pool status,
// with Prometheus metrics, health endpoints, Events and JSON logs. SIGTERM (or SIGINT) stops acting at once, hands
// the lease back and exits 0.
import type { Server } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { ApiClient } from '../kube/api.ts';
import type { ApiEndpoint } from '../kube/kubeconfig.ts';
import { Controller } from './controller.ts';
import { controllerEndpoint } from '../kube/in-cluster.ts';
import type { ControllerFlags } from './runtime/flags.ts';
import { serve } from './runtime/http.ts';
import { messageOf } from '../errors.ts';
import { jsonLog } from '../log/json-log.ts';

/** Runs until SIGTERM (exit 0), or one pass with --once (exit 1 when the lease was not won); `load` reads the credentials. */
export async function runController(flags: ControllerFlags, load: () => Promise<ApiEndpoint>): Promise<number> {
  // Keep V8's young generation at its initial size: the controller's garbage is list pages and watch events
  // that die young, and a young generation grown to its 2 x 32 MiB maximum would cost 60 MiB of RSS for nothing.
  setFlagsFromString('--semi-space-growth-factor=1');
  const log = jsonLog({ level: flags.logLevel });
  const { endpoint, refreshCredentials } = await controllerEndpoint(load);
  const namespace = flags.namespace ?? endpoint.namespace;
  const api = new ApiClient({ ...endpoint, namespace }, { timeoutMs: 30_000 });
  const controller = new Controller(api, flags, log);
  const servers = await listen(flags, controller);
  // Tokens rotate (projected service-account tokens, exec plugins): read the credentials again now and then.
  const refresh = setInterval(() => {
    refreshCredentials().catch((err: unknown) => log.warning(`cannot refresh credentials: ${messageOf(err)}`));
  }, 60_000);
  refresh.unref();
  const shutdown = async (code: number): Promise<number> => {
    clearInterval(refresh);
    await controller.stop();
    for (const server of servers) server.close();
    api.close();
    // Nothing should keep the process alive now; if something does, do not hang a rolling update over it.
    setTimeout(() => process.exit(code), 2000).unref();
    return code;
  };
  log.info('controller started', {
    identity: flags.leader.identity,
    namespace,
    lease: `${flags.leader.namespace ?? namespace}/${flags.leader.name}`,
    server: endpoint.server,
    reconcileIntervalMs: flags.reconcileIntervalMs,
  });
  controller.start({ scheduled: !flags.once });
  if (flags.once) {
    const acted = await controller.runOnce(Math.max(60_000, 2 * flags.leader.leaseDurationMs));
    return shutdown(acted ? 0 : 1);
  }
  const signal = await new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  log.info(`${signal}: stopping`);
  return shutdown(0);
}

async function listen(flags: ControllerFlags, controller: Controller): Promise<Server[]> {
  const notReady = (): string | undefined => controller.notReady();
  if (flags.metricsAddr !== '' && flags.metricsAddr === flags.healthAddr) {
    return [await serve(flags.metricsAddr, { metrics: controller.metrics.registry, notReady })];
  }
  const servers: Server[] = [];
  if (flags.metricsAddr !== '') servers.push(await serve(flags.metricsAddr, { metrics: controller.metrics.registry }));
  if (flags.healthAddr !== '') servers.push(await serve(flags.healthAddr, { notReady }));
  return servers;
}
