// STATUS (CNI 1.1): code 50 when an ADD could not be served now (store unusable or a range exhausted).
import { checkCapacity } from '../../ipam/capacity.ts';
import { poolsOf, type VerbContext } from './context.ts';

export async function cmdStatus(ctx: VerbContext): Promise<void> {
  await checkCapacity(ctx.store, ctx.config, await poolsOf(ctx, 'status'));
}
