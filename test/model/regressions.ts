// Shrunk sequences of the failure kinds the extended model test found on main before issue 20's fixes, and of those
// it found on the fixed code after (and the two scenarios written by hand that follow a kind to its duplicate): each is replayed exactly by regressions.test.ts
// and must keep every invariant. Steps are data (steps.ts); a sequence's seed seeds its random draws (jitter).
import type { Step } from './steps.ts';

export interface Regression {
  /** What must hold, as the test's name. */
  readonly name: string;
  /** Where the defect is described. */
  readonly ref: string;
  readonly seed: number;
  readonly steps: readonly Step[];
}

export const REGRESSIONS: readonly Regression[] = [
  {
    name: 'a NodeSlicePool deleted by hand is created again around the slices its live pools hold',
    ref: 'issue 20 #1',
    seed: 2395929652,
    steps: [
      { op: 'node-leave', node: 'n1' },
      { op: 'pod-create', pod: 'p0', node: 'n2', nets: ['S'] },
      { op: 'add', pod: 'p0', faults: { seed: 4255656776, rate: 0.08 } },
      { op: 'nsp-delete' },
      { op: 'node-join', node: 'n3', wipe: false },
    ],
  },
  {
    name: 'a NodeSlicePool the garbage collector took with its last NAD is rebuilt from the live slice pools: no address twice',
    ref: 'issue 20 #1',
    seed: 7,
    steps: [
      { op: 'pod-create', pod: 'p1', node: 'n2', nets: ['S'] },
      { op: 'add', pod: 'p1', faults: { seed: 1, rate: 0 } },
      { op: 'node-leave', node: 'n1' },
      { op: 'node-join', node: 'n3', wipe: true },
      { op: 'controller', stale: [], faults: { seed: 2, rate: 0 } },
      { op: 'nad-delete', net: 'S' },
      { op: 'nad-create', net: 'S' },
      { op: 'controller', stale: [], faults: { seed: 3, rate: 0 } },
      { op: 'pod-create', pod: 'p2', node: 'n3', nets: ['S'] },
      { op: 'add', pod: 'p2', faults: { seed: 4, rate: 0 } },
    ],
  },
  {
    name: "a reservation Whereabouts' reconciler deletes under an ADD is not missing once that ADD committed",
    ref: 'issue 20 #2',
    seed: 2076948092,
    steps: [
      { op: 'pod-create', pod: 'p4', node: 'n1', nets: ['A'] },
      {
        op: 'interleave',
        main: { op: 'add', pod: 'p4', faults: { seed: 3808730182, rate: 0.08 } },
        at: { on: 'pool-write', nth: 0 },
        other: { op: 'wb-reconcile', faults: { seed: 2273910237, rate: 0 } },
      },
    ],
  },
  {
    name: "an address whose reservation Whereabouts' reconciler deleted under the ADD is not taken by an overlapping network",
    ref: 'issue 20 #2',
    seed: 3527775920,
    steps: [
      { op: 'pod-create', pod: 'p4', node: 'n2', nets: ['B'] },
      { op: 'pod-create', pod: 'p3', node: 'n2', nets: ['A'] },
      {
        op: 'interleave',
        main: { op: 'add', pod: 'p4', faults: { seed: 3066472841, rate: 0.08 } },
        at: { on: 'pool-write', nth: 0 },
        other: { op: 'wb-reconcile', faults: { seed: 3613026487, rate: 0 } },
      },
      { op: 'add', pod: 'p3', faults: { seed: 2739179596, rate: 0.08 } },
    ],
  },
  {
    name: "a pod's second interface does not take its first interface's address after Whereabouts' reconciler deleted the reservation",
    ref: 'issue 20 #2',
    seed: 1201950830,
    steps: [
      { op: 'pod-create', pod: 'p6', node: 'n1', nets: ['A', 'B'] },
      {
        op: 'interleave',
        main: { op: 'add', pod: 'p6', faults: { seed: 265482781, rate: 0.08 } },
        at: { on: 'pool-write', nth: 0 },
        other: { op: 'wb-reconcile', faults: { seed: 2169579451, rate: 0 } },
      },
    ],
  },
  {
    name: 'a controller pass while a retried ADD adopts its earlier reservation does not leave the committed address unreserved',
    ref: 'issue 20 #2',
    seed: 3770540868,
    steps: [
      { op: 'pod-create', pod: 'p9', node: 'n1', nets: ['A'] },
      { op: 'add', pod: 'p9', faults: { seed: 2855853155, rate: 0.08 } },
      { op: 'pod-delete', pod: 'p9', graceful: false },
      { op: 'pod-create', pod: 'p9', node: 'n1', nets: ['A'] },
      { op: 'del', node: 'n1', pick: 3, faults: { seed: 3811763765, rate: 0.08, kill: { at: 1, after: true } } },
      { op: 'add', pod: 'p9', faults: { seed: 87333716, rate: 0.08, kill: { at: 5, after: false } } },
      { op: 'time', ms: 400000 },
      {
        op: 'interleave',
        main: { op: 'add', pod: 'p9', faults: { seed: 569393910, rate: 0.08 } },
        at: { on: 'pool-write', nth: 0 },
        other: { op: 'controller', stale: [], faults: { seed: 886760919, rate: 0.08 } },
      },
    ],
  },
  {
    name: 'a controller pass while a retried ADD adopts its earlier reservation lets no overlapping network take the address',
    ref: 'issue 20 #2',
    seed: 3,
    steps: [
      { op: 'pod-create', pod: 'p1', node: 'n1', nets: ['A'] },
      { op: 'add', pod: 'p1', faults: { seed: 1, rate: 0, kill: { at: 2, after: false } } },
      { op: 'time', ms: 400000 },
      {
        op: 'interleave',
        main: { op: 'add', pod: 'p1', faults: { seed: 1, rate: 0 } },
        at: { on: 'pool-write', nth: 0 },
        other: { op: 'controller', stale: [], faults: { seed: 2, rate: 0 } },
      },
      { op: 'pod-create', pod: 'p2', node: 'n2', nets: ['B'] },
      { op: 'add', pod: 'p2', faults: { seed: 1, rate: 0 } },
    ],
  },
  {
    name: 'a legacy reservation without ifname is not adopted by another interface of the same pod',
    ref: 'issue 20 #3',
    seed: 711877845,
    steps: [
      { op: 'pod-create', pod: 'p8', node: 'n1', nets: ['A', 'B'] },
      { op: 'add', pod: 'p8', faults: { seed: 1802187343, rate: 0.08 } },
      { op: 'legacy', pod: 'p8' },
      { op: 'add', pod: 'p8', faults: { seed: 1949289855, rate: 0.08 } },
    ],
  },
  {
    name: "a stalled ADD in the node agent's pid namespace keeps its pool lock against a plugin process on the host",
    ref: 'issue 20 #4',
    seed: 704018781,
    steps: [
      { op: 'pod-create', pod: 'p1', node: 'n1', nets: ['B'] },
      { op: 'pod-create', pod: 'p3', node: 'n1', nets: ['B'] },
      {
        op: 'stall',
        holder: 'p3',
        waiter: 'p1',
        ms: 50,
        faults: { seed: 4008685892, rate: 0.08 },
        split: true,
        agedMs: 60000,
      },
    ],
  },
  {
    name: "a tenant's NAD with another node_slice_size does not keep new nodes from a slice",
    ref: 'issue 20 #6',
    seed: 194086991,
    steps: [
      { op: 'node-join', node: 'n4', wipe: false },
      { op: 'tenant-nad', size: 27 },
    ],
  },
  {
    name: "a tenant's NAD with another node_slice_size does not keep the network from being resliced",
    ref: 'issue 20 #6',
    seed: 3326525123,
    steps: [
      { op: 'tenant-nad', size: 27 },
      { op: 'reslice', size: 29 },
    ],
  },
  {
    name: "a tenant's NAD with another node_slice_size does not keep a deleted NodeSlicePool from being created again",
    ref: 'issue 20 #6',
    seed: 119696947,
    steps: [{ op: 'tenant-nad', size: 29 }, { op: 'nsp-delete' }],
  },
  {
    name: "a hereabouts ADD between Whereabouts' reservation check and its pool write takes no address twice",
    ref: 'issue 20, mixed use',
    seed: 598532142,
    steps: [
      { op: 'switch', node: 'n2', binary: 'whereabouts' },
      { op: 'pod-create', pod: 'p6', node: 'n1', nets: ['B'] },
      { op: 'pod-create', pod: 'p1', node: 'n2', nets: ['A'] },
      {
        op: 'interleave',
        main: { op: 'add', pod: 'p1', faults: { seed: 142590239, rate: 0.08 } },
        at: { on: 'pool-write', nth: 1 },
        other: { op: 'add', pod: 'p6', faults: { seed: 278745955, rate: 0.08 } },
      },
    ],
  },
  {
    name: "a hereabouts ADD between Whereabouts' pool write and its reservation create takes no address twice",
    ref: 'issue 20, mixed use',
    seed: 327245815,
    steps: [
      { op: 'switch', node: 'n1', binary: 'whereabouts' },
      { op: 'pod-create', pod: 'p0', node: 'n2', nets: ['A'] },
      { op: 'pod-create', pod: 'p6', node: 'n1', nets: ['B'] },
      {
        op: 'interleave',
        main: { op: 'add', pod: 'p6', faults: { seed: 843607053, rate: 0.08 } },
        at: { on: 'reservation-write', nth: 0 },
        other: { op: 'add', pod: 'p0', faults: { seed: 2397899521, rate: 0.08 } },
      },
    ],
  },
  {
    name: 'concurrent ADDs of Whereabouts and hereabouts on overlapping networks take no address twice',
    ref: 'issue 20, mixed use',
    seed: 328431808,
    steps: [
      { op: 'node-join', node: 'n3', wipe: true },
      { op: 'switch', node: 'n1', binary: 'whereabouts' },
      { op: 'pod-create', pod: 'p5', node: 'n3', nets: ['B'] },
      { op: 'add', pod: 'p5', faults: { seed: 1032876267, rate: 0.08 } },
      { op: 'pod-create', pod: 'p8', node: 'n3', nets: ['A'] },
      { op: 'pod-create', pod: 'p9', node: 'n1', nets: ['B'] },
      {
        op: 'parallel',
        steps: [
          { op: 'add', pod: 'p8', faults: { seed: 639352038, rate: 0.08 } },
          { op: 'add', pod: 'p9', faults: { seed: 3004729571, rate: 0.08 } },
          { op: 'gc', node: 'n2', net: 'C', stale: false, faults: { seed: 276469602, rate: 0.08 } },
        ],
      },
    ],
  },
  {
    name: "a DEL releases its container's legacy record (no ifname)",
    ref: 'legacy records',
    seed: 4265113122,
    steps: [
      { op: 'pod-create', pod: 'p3', node: 'n2', nets: ['B'] },
      { op: 'add', pod: 'p3', faults: { seed: 4241325880, rate: 0.08 } },
      { op: 'legacy', pod: 'p3' },
      { op: 'add', pod: 'p3', faults: { seed: 3676315361, rate: 0.08 } },
    ],
  },
  {
    name: 'a Whereabouts record of a pod that is gone is released although a new pod of the same name is Pending',
    ref: 'mixed use',
    seed: 19587837,
    steps: [
      { op: 'switch', node: 'n3', binary: 'whereabouts' },
      { op: 'node-join', node: 'n4', wipe: true },
      { op: 'node-join', node: 'n3', wipe: true },
      { op: 'pod-create', pod: 'p9', node: 'n3', nets: ['A'] },
      { op: 'add', pod: 'p9', faults: { seed: 3220888771, rate: 0.08 } },
      { op: 'node-leave', node: 'n3' },
      { op: 'pod-create', pod: 'p9', node: 'n4', nets: ['C'] },
    ],
  },
  {
    name: "an ADD whose reservation confirmation meets a passing API failure, after Whereabouts' reconciler deleted the reservation under it, leaves no address unreserved",
    ref: 'issue 20 #2, found after the fixes',
    seed: 3110736097,
    steps: [
      { op: 'pod-create', pod: 'p6', node: 'n2', nets: ['B'] },
      {
        op: 'interleave',
        main: { op: 'add', pod: 'p6', faults: { seed: 1445890948, rate: 0.08 } },
        at: { on: 'pool-write', nth: 0 },
        other: { op: 'wb-reconcile', faults: { seed: 643815308, rate: 0 } },
      },
    ],
  },
  {
    name: "an address whose reservation Whereabouts' reconciler deleted under an ADD that then met a passing API failure is not taken twice",
    ref: 'issue 20 #2, found after the fixes',
    seed: 1751445802,
    steps: [
      { op: 'pod-create', pod: 'p5', node: 'n1', nets: ['A'] },
      { op: 'pod-create', pod: 'p2', node: 'n2', nets: ['B'] },
      {
        op: 'interleave',
        main: { op: 'add', pod: 'p5', faults: { seed: 962966803, rate: 0.08 } },
        at: { on: 'pool-write', nth: 0 },
        other: { op: 'wb-reconcile', faults: { seed: 3014953823, rate: 0 } },
      },
      { op: 'add', pod: 'p2', faults: { seed: 3686598885, rate: 0.08 } },
    ],
  },
  {
    name: "a new pod of a name does not adopt the uid-less reservation of its predecessor's record in an overlapping range",
    ref: 'issue 20 #3, found after the fixes',
    seed: 3596093747,
    steps: [
      { op: 'pod-create', pod: 'p7', node: 'n1', nets: ['B'] },
      { op: 'add', pod: 'p7', faults: { seed: 1902007803, rate: 0.08, kill: { at: 4, after: false } } },
      { op: 'pod-evict', pod: 'p7', reason: 'PreemptionByScheduler' },
      { op: 'switch', node: 'n1', binary: 'whereabouts' },
      { op: 'pod-create', pod: 'p2', node: 'n2', nets: ['B'] },
      { op: 'del', node: 'n1', pick: 3, faults: { seed: 3801272763, rate: 0.08 } },
      { op: 'controller', stale: [], faults: { seed: 3274607146, rate: 0.08 } },
      {
        op: 'controller',
        stale: ['pods', 'pools'],
        faults: { seed: 682357990, rate: 0.08, kill: { at: 2, after: false } },
      },
      { op: 'add', pod: 'p2', faults: { seed: 638359345, rate: 0.08 } },
      { op: 'controller', stale: ['nads'], faults: { seed: 2451009564, rate: 0.08 } },
      { op: 'pod-terminate', pod: 'p2', phase: 'Succeeded', del: true },
      {
        op: 'parallel',
        steps: [
          { op: 'del', node: 'n2', pick: 2, faults: { seed: 635050289, rate: 0.08 } },
          { op: 'add', pod: 'p7', faults: { seed: 4216016716, rate: 0.08 } },
        ],
      },
      { op: 'pod-create', pod: 'p4', node: 'n2', nets: ['B'] },
      { op: 'legacy', pod: 'p7' },
      {
        op: 'parallel',
        steps: [
          { op: 'gc', node: 'n2', net: 'B', stale: false, faults: { seed: 3487824470, rate: 0.08 } },
          { op: 'add', pod: 'p7', faults: { seed: 2156874327, rate: 0.08 } },
        ],
      },
      { op: 'pod-delete', pod: 'p7', graceful: true },
      { op: 'pod-create', pod: 'p7', node: 'n2', nets: ['A', 'B'] },
      { op: 'add', pod: 'p7', faults: { seed: 2851943487, rate: 0.08 } },
    ],
  },
  {
    name: 'the controller judges a uid-less record by its reservation read live, not by a cached one of an earlier pod',
    ref: 'issue 20, mixed use, found after the fixes',
    seed: 789189284,
    steps: [
      { op: 'pod-create', pod: 'p5', node: 'n2', nets: ['A'] },
      { op: 'add', pod: 'p5', faults: { seed: 670995138, rate: 0.08 } },
      { op: 'controller', stale: ['pools'], faults: { seed: 3438344472, rate: 0.08 } },
      { op: 'switch', node: 'n3', binary: 'whereabouts' },
      { op: 'node-join', node: 'n3', wipe: true },
      { op: 'node-leave', node: 'n2' },
      { op: 'pod-create', pod: 'p5', node: 'n3', nets: ['B'] },
      { op: 'wb-reconcile', faults: { seed: 3394914934, rate: 0 } },
      { op: 'add', pod: 'p5', faults: { seed: 2800415335, rate: 0.08 } },
      { op: 'controller', stale: ['reservations'], faults: { seed: 4217217308, rate: 0.08 } },
    ],
  },
  {
    name: "an ADD whose pool write answer was lost, after Whereabouts' reconciler deleted its reservation, leaves no address unreserved",
    ref: 'issue 20 #2, found after the fixes',
    seed: 2481718004,
    steps: [
      { op: 'pod-create', pod: 'p5', node: 'n1', nets: ['B'] },
      {
        op: 'interleave',
        main: { op: 'add', pod: 'p5', faults: { seed: 669977356, rate: 0.08 } },
        at: { on: 'pool-write', nth: 0 },
        other: { op: 'wb-reconcile', faults: { seed: 1363181504, rate: 0 } },
      },
    ],
  },
  {
    name: "a held address that a Whereabouts ADD killed between its writes left unreserved gets its reservation from the pod's next hereabouts ADD while Whereabouts writes",
    ref: 'issue 20, mixed use, found after the fixes',
    seed: 2398969693,
    steps: [
      { op: 'switch', node: 'n4', binary: 'hereabouts' },
      { op: 'nad-delete', net: 'C' },
      { op: 'pod-create', pod: 'p3', node: 'n2', nets: ['S'] },
      { op: 'pod-create', pod: 'p1', node: 'n2', nets: ['B'] },
      { op: 'pod-create', pod: 'p9', node: 'n2', nets: ['C'] },
      { op: 'switch', node: 'n2', binary: 'whereabouts' },
      { op: 'add', pod: 'p1', faults: { seed: 1841588906, rate: 0.08, kill: { at: 7, after: true } } },
      { op: 'pod-create', pod: 'p6', node: 'n1', nets: ['A', 'B'] },
      { op: 'switch', node: 'n2', binary: 'hereabouts' },
      { op: 'add', pod: 'p6', faults: { seed: 3259499272, rate: 0.08 } },
      { op: 'add', pod: 'p1', faults: { seed: 1717823922, rate: 0.08 } },
    ],
  },
  {
    name: 'an ADD that takes over its record after a killed attempt brings the reservation back despite passing API failures: no address twice',
    ref: 'issue 20 #2, found after the fixes',
    seed: 420497249,
    steps: [
      { op: 'pod-create', pod: 'p8', node: 'n1', nets: ['B', 'A'] },
      { op: 'add', pod: 'p8', faults: { seed: 52300931, rate: 0.08 } },
      { op: 'switch', node: 'n1', binary: 'whereabouts' },
      {
        op: 'parallel',
        steps: [
          { op: 'del', node: 'n1', pick: 0, faults: { seed: 631415444, rate: 0.08 } },
          { op: 'gc', node: 'n4', net: 'C', stale: true, faults: { seed: 3640440019, rate: 0.08 } },
          { op: 'gc', node: 'n2', net: 'B', stale: true, faults: { seed: 2831922758, rate: 0.08 } },
        ],
      },
      {
        op: 'parallel',
        steps: [
          { op: 'controller', stale: [], faults: { seed: 1281921019, rate: 0.08 } },
          { op: 'del', node: 'n1', pick: 2, faults: { seed: 2365046165, rate: 0.08 } },
          { op: 'gc', node: 'n4', net: 'C', stale: false, faults: { seed: 2424536849, rate: 0.08 } },
        ],
      },
      { op: 'pod-create', pod: 'p9', node: 'n2', nets: ['A'] },
      {
        op: 'interleave',
        main: { op: 'add', pod: 'p9', faults: { seed: 3293953218, rate: 0.08, kill: { at: 5, after: true } } },
        at: { on: 'pool-write', nth: 0 },
        other: { op: 'wb-reconcile', faults: { seed: 3971765986, rate: 0 } },
      },
      { op: 'add', pod: 'p9', faults: { seed: 1421318304, rate: 0.08 } },
      {
        op: 'interleave',
        main: { op: 'add', pod: 'p5', faults: { seed: 3195341529, rate: 0.08, kill: { at: 6, after: false } } },
        at: { on: 'request', nth: 0 },
        other: { op: 'del', node: 'n2', pick: 1, faults: { seed: 3317326297, rate: 0.08 } },
      },
      { op: 'pod-create', pod: 'p6', node: 'n2', nets: ['B'] },
      {
        op: 'interleave',
        main: { op: 'add', pod: 'p6', faults: { seed: 1783152778, rate: 0.08 } },
        at: { on: 'reservation-write', nth: 1 },
        other: { op: 'controller', stale: [], faults: { seed: 491410287, rate: 0.08 } },
      },
    ],
  },
  {
    name: 'a failing ADD gives back the claim of a write whose answer was lost even when its first give-back meets a passing API failure',
    ref: 'issue 20 #2, found after the fixes',
    seed: 447999017,
    steps: [
      { op: 'pod-create', pod: 'p8', node: 'n2', nets: ['B'] },
      { op: 'add', pod: 'p8', faults: { seed: 1196200883, rate: 0.08 } },
      { op: 'pod-create', pod: 'p9', node: 'n2', nets: ['A'] },
      {
        op: 'interleave',
        main: { op: 'add', pod: 'p9', faults: { seed: 2854004895, rate: 0.08 } },
        at: { on: 'pool-write', nth: 0 },
        other: { op: 'wb-reconcile', faults: { seed: 2933944503, rate: 0 } },
      },
    ],
  },
  {
    name: 'a running pod keeps the uid-less record its ADD took over from an earlier pod of its name',
    ref: 'issue 20, mixed use, found after the fixes',
    seed: 1041274909,
    steps: [
      { op: 'pod-create', pod: 'p1', node: 'n1', nets: ['B'] },
      { op: 'add', pod: 'p1', faults: { seed: 396670548, rate: 0.08 } },
      { op: 'pod-delete', pod: 'p1', graceful: false },
      { op: 'pod-create', pod: 'p1', node: 'n1', nets: ['B'] },
      { op: 'add', pod: 'p1', faults: { seed: 3195933383, rate: 0.08, kill: { at: 4, after: true } } },
      { op: 'legacy', pod: 'p1' },
    ],
  },
  {
    name: "a Whereabouts ADD that relied on its pod's reservation while its own reconciler deleted it is Whereabouts' own window, and takes no address twice",
    ref: 'issue 20, mixed use, found after the fixes',
    seed: 3943260572,
    steps: [
      { op: 'pod-create', pod: 'p7', node: 'n1', nets: ['B'] },
      { op: 'add', pod: 'p7', faults: { seed: 2156226416, rate: 0.08 } },
      { op: 'switch', node: 'n1', binary: 'whereabouts' },
      { op: 'pod-evict', pod: 'p7', reason: 'DeletionByTaintManager' },
      {
        op: 'interleave',
        main: { op: 'add', pod: 'p7', faults: { seed: 3377128670, rate: 0.08 } },
        at: { on: 'pool-write', nth: 0 },
        other: { op: 'wb-reconcile', faults: { seed: 3950481840, rate: 0 } },
      },
    ],
  },
  {
    name: 'a uid-less record without a reservation is kept while a new pod of its name is Pending, and released once it is gone',
    ref: 'issue 20, mixed use, found after the fixes',
    seed: 1987860928,
    steps: [
      { op: 'pod-create', pod: 'p8', node: 'n2', nets: ['S'] },
      { op: 'add', pod: 'p8', faults: { seed: 3777004840, rate: 0.08 } },
      { op: 'legacy', pod: 'p8' },
      { op: 'pod-terminate', pod: 'p8', phase: 'Succeeded', del: false },
      { op: 'pod-delete', pod: 'p8', graceful: true },
      { op: 'pod-delete', pod: 'p8', graceful: true },
      { op: 'pod-create', pod: 'p8', node: 'n2', nets: ['A'] },
    ],
  },
  {
    name: "a pod's two legacy records on one network are both released by its DELs answered from the node agent",
    ref: "issue 22, warm sets: the second DEL must not see the first one's address again",
    seed: 1698769854,
    steps: [
      { op: 'node-join', node: 'n3', wipe: true },
      { op: 'pod-create', pod: 'p4', node: 'n3', nets: ['A', 'A'] },
      { op: 'gc', node: 'n3', net: 'A', stale: false, faults: { seed: 1750407435, rate: 0.08 } },
      { op: 'add', pod: 'p4', faults: { seed: 1408372618, rate: 0.08 } },
      { op: 'add', pod: 'p4', faults: { seed: 261914539, rate: 0.08 } },
      { op: 'legacy', pod: 'p4' },
      { op: 'del', node: 'n3', pick: 3, faults: { seed: 2348563076, rate: 0.08, kill: { at: 4, after: true } } },
      { op: 'add', pod: 'p4', faults: { seed: 1697467323, rate: 0.08 } },
    ],
  },
];
