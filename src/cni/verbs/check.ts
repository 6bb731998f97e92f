// CHECK: every address of prevResult must still be allocated to this container+ifname.
import { addressOf } from '../../ip/cidr.ts';
import { verify } from '../../ipam/verify.ts';
import type { CheckEnv } from '../env.ts';
import { parsePrevResult } from '../prev-result.ts';
import { attachmentOf, poolsOf, type VerbContext } from './context.ts';

export async function cmdCheck(ctx: VerbContext & { env: CheckEnv }): Promise<void> {
  const prev = parsePrevResult(ctx.config.prevResult, ctx.version);
  const addresses = prev.ips.map((ip) => addressOf(ip.address));
  await verify(ctx.store, ctx.config, attachmentOf(ctx.env), addresses, await poolsOf(ctx, 'allocate'));
}
