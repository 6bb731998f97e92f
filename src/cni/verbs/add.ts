// ADD: static addresses as configured, then one allocated address per range (all or nothing).
import { formatIP } from '../../ip/address.ts';
import { assign } from '../../ipam/assign.ts';
import type { AddEnv } from '../env.ts';
import { renderResult, type IpamResultIP, type ResultJson } from '../result.ts';
import { attachmentOf, poolsOf, withBinding, type VerbContext } from './context.ts';

export async function cmdAdd(ctx: VerbContext & { env: AddEnv }): Promise<ResultJson> {
  const { config, store, logger } = ctx;
  const attachment = await withBinding(ctx, attachmentOf(ctx.env), ctx.env.args);
  const sticky = attachment.binding !== undefined;
  const options = { ...(await poolsOf(ctx, 'allocate', sticky)), warn: (msg: string) => logger.warning(msg) };
  const assigned = await assign(store, config, attachment, options);
  const ips: IpamResultIP[] = [
    ...config.ipam.addresses.map((s) => ({
      address: s.address,
      ...(s.gateway === undefined ? {} : { gateway: s.gateway }),
    })),
    ...assigned.map((a) => ({
      address: {
        family: a.address.family,
        address: a.address.value,
        prefix: a.pool.resultPrefix ?? a.range.cidr.prefix,
      },
      ...(a.range.gateway === undefined ? {} : { gateway: a.range.gateway }),
    })),
  ];
  if (attachment.binding !== undefined) logger.info(`sticky: bound to ${attachment.binding}`);
  logger.info(
    `assigned ${assigned.map((a) => `${formatIP(a.address)}${a.claimed ? '' : ' (already held)'}`).join(', ') || 'static addresses only'}`,
  );
  return renderResult(
    { ips, routes: config.ipam.routes, ...(config.ipam.dns === undefined ? {} : { dns: config.ipam.dns }) },
    ctx.version,
  );
}
