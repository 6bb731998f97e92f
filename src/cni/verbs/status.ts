// STATUS (CNI 1.1): code 50 only when the store cannot serve an ADD now; an exhausted range is not a failure.
import { checkAvailable } from '../../ipam/availability.ts';
import { poolsOf, type VerbContext } from './context.ts';

export async function cmdStatus(ctx: VerbContext): Promise<void> {
  await checkAvailable(ctx.store, ctx.config, await poolsOf(ctx, 'status'));
}
