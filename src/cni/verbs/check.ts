// CHECK: every address of prevResult must still be allocated to this container+ifname.
import { addressOf } from '../../ip/cidr.ts';
import { verify } from '../../ipam/verify.ts';
import type { CheckEnv } from '../env.ts';
import { parsePrevResult } from '../prev-result.ts';
import { attachmentOf, poolsOf, type VerbContext } from './context.ts';
import { ErrorKind, isKind } from '../../errors.ts';
import type { PoolRef } from '../../store/store.ts';

export async function cmdCheck(ctx: VerbContext & { env: CheckEnv }): Promise<void> {
  const prev = parsePrevResult(ctx.config.prevResult, ctx.version);
  const addresses = prev.ips.map((ip) => addressOf(ip.address));
  const { pools } = await poolsOf(ctx, 'allocate');
  await verify(ctx.store, ctx.config, attachmentOf(ctx.env), addresses, {
    pools: [...pools, ...(await stickyArea(ctx))],
  });
}

/** A sticky node-sliced network's sticky area (docs/sticky.md): a sticky pod's address lives there, not in a slice. */
async function stickyArea(ctx: VerbContext): Promise<readonly PoolRef[]> {
  if (ctx.config.ipam.sticky === undefined || ctx.config.ipam.nodeSliceSize === undefined) return [];
  try {
    return (await poolsOf(ctx, 'allocate', true)).pools;
  } catch (err) {
    if (isKind(err, ErrorKind.Unavailable)) return []; // no sticky area (yet): no address can be there
    throw err;
  }
}
