/**
 * Free GPUs during one scheduling pass, and gang fitting: every GPU of a job on one node, of one
 * model, lowest indices first. A pass takes from its own snapshot, so it can never hand out one
 * GPU twice or a GPU an attempt holds.
 */
import { freeGpuIndices, type GpuRequest, type NodeRecord } from './state.js';

/** The GPUs of one attempt: one node, one model. */
export interface Gang {
  nodeId: string;
  gpuModel: string;
  /** Ascending. */
  gpuIndices: number[];
}

interface NodeFree {
  nodeId: string;
  /** GPUs the node offers (busy or not). */
  size: number;
  /** Model → free indices, ascending; models in the order of their lowest index on the node. */
  byModel: Map<string, number[]>;
  count: number;
}

/** Free capacity for one pass, over registered nodes in first-fit order. */
export class PassCapacity {
  /** Built on first use: a pass that places nothing never looks at each node's GPUs. */
  private built: NodeFree[] | undefined;
  private byId: Map<string, NodeFree> | undefined;
  private index: Map<string, number> | undefined;
  private free = 0;
  /** Upper bound of the free GPUs of one model on one node (exact at start, never too low after takes): skips hopeless scans. */
  private maxGang = 0;
  /** Most GPUs of each model on one node, busy or not, and of any one model: what one node could ever hold. */
  private readonly largestByModel = new Map<string, number>();
  private largestAny = 0;

  /** `nodes`: registered nodes in first-fit order. */
  constructor(private readonly source: readonly NodeRecord[]) {
    for (const node of source) this.free += node.gpus.length - node.busy.size;
  }

  /** Every node's free GPUs (each built on first use). */
  private get nodes(): NodeFree[] {
    if (this.built) return this.built;
    this.built = this.source.map((node, i) => this.byId?.get(node.nodeId) ?? this.build(i));
    this.byId = new Map(this.built.map((n) => [n.nodeId, n]));
    this.free = this.built.reduce((n, node) => n + node.count, 0);
    return this.built;
  }

  private build(i: number): NodeFree {
    const node = this.source[i]!;
    const models = new Map(node.gpus.map((g) => [g.index, g.model]));
    const byModel = new Map<string, number[]>();
    const indices = freeGpuIndices(node);
    for (const idx of indices) {
      const model = models.get(idx)!;
      const list = byModel.get(model);
      if (list) list.push(idx);
      else byModel.set(model, [idx]);
    }
    for (const list of byModel.values()) this.maxGang = Math.max(this.maxGang, list.length);
    const sizes = new Map<string, number>();
    for (const g of node.gpus) sizes.set(g.model, (sizes.get(g.model) ?? 0) + 1);
    for (const [model, n] of sizes) {
      this.largestByModel.set(model, Math.max(this.largestByModel.get(model) ?? 0, n));
      this.largestAny = Math.max(this.largestAny, n);
    }
    return { nodeId: node.nodeId, size: node.gpus.length, byModel, count: indices.length };
  }

  /** One node's free GPUs; only that node is built when a policy takes gangs it found itself. */
  private node(nodeId: string): NodeFree | undefined {
    if (this.built) return this.byId!.get(nodeId);
    this.byId ??= new Map();
    let n = this.byId.get(nodeId);
    if (n) return n;
    this.index ??= new Map(this.source.map((node, i) => [node.nodeId, i]));
    const i = this.index.get(nodeId);
    if (i === undefined) return undefined;
    n = this.build(i);
    this.byId.set(nodeId, n);
    return n;
  }

  /** Free GPUs left in this pass, over all nodes and models. */
  get totalFree(): number {
    return this.free;
  }

  /** Free GPU indices per node and model left in this pass (for queries and tests). */
  snapshot(): { nodeId: string; gpuModel: string; gpuIndices: number[] }[] {
    return this.nodes.flatMap((n) => [...n.byModel].map(([gpuModel, idx]) => ({ nodeId: n.nodeId, gpuModel, gpuIndices: [...idx] })));
  }

  /** The first node (in order) with enough free GPUs of the requested model (of any one model when none is asked), lowest indices first. */
  fit(request: Pick<GpuRequest, 'gpus' | 'gpuModel'>): Gang | undefined {
    const nodes = this.nodes;
    if (request.gpus > this.free || request.gpus > this.maxGang) return undefined;
    for (const node of nodes) {
      if (node.count < request.gpus) continue;
      if (request.gpuModel !== undefined) {
        const free = node.byModel.get(request.gpuModel);
        if (free && free.length >= request.gpus) return { nodeId: node.nodeId, gpuModel: request.gpuModel, gpuIndices: free.slice(0, request.gpus) };
        continue;
      }
      for (const [gpuModel, free] of node.byModel) {
        if (free.length >= request.gpus) return { nodeId: node.nodeId, gpuModel, gpuIndices: free.slice(0, request.gpus) };
      }
    }
    return undefined;
  }

  /**
   * Whole free nodes for a job larger than any node: nodes entirely free and of one model (the
   * requested one, or the first model that can hold the job), in first-fit order; every GPU of
   * each node but the last, the rest on the last. All or nothing: undefined unless the whole
   * request fits now. Nothing is taken; see {@link takeAll}.
   */
  fitWhole(request: Pick<GpuRequest, 'gpus' | 'gpuModel'>): Gang[] | undefined {
    if (request.gpus > this.free) return undefined;
    const byModel = new Map<string, NodeFree[]>();
    for (const node of this.nodes) {
      if (node.count !== node.size || node.byModel.size !== 1) continue;
      const model = node.byModel.keys().next().value!;
      if (request.gpuModel !== undefined && model !== request.gpuModel) continue;
      const list = byModel.get(model);
      if (list) list.push(node);
      else byModel.set(model, [node]);
    }
    for (const [gpuModel, nodes] of byModel) {
      const gangs: Gang[] = [];
      let left = request.gpus;
      for (const node of nodes) {
        if (left === 0) break;
        const indices = node.byModel.get(gpuModel)!.slice(0, Math.min(left, node.size));
        gangs.push({ nodeId: node.nodeId, gpuModel, gpuIndices: indices });
        left -= indices.length;
      }
      if (left === 0) return gangs;
    }
    return undefined;
  }

  /**
   * Where a job goes now, as one gang per node: {@link fit} for a job that some node could hold,
   * {@link fitWhole} for one larger than every node (of its model). Undefined when it does not fit now.
   */
  fitGangs(request: Pick<GpuRequest, 'gpus' | 'gpuModel'>): Gang[] | undefined {
    void this.nodes;
    const largest = request.gpuModel === undefined ? this.largestAny : (this.largestByModel.get(request.gpuModel) ?? 0);
    if (request.gpus <= largest) {
      const gang = this.fit(request);
      return gang && [gang];
    }
    return this.fitWhole(request);
  }

  /**
   * Takes every gang of one job, or none: each is checked before any is taken, so a gang that is
   * not free can never leave part of a job held (a partial hold could deadlock two large jobs).
   */
  takeAll(gangs: readonly Gang[]): void {
    const seen = new Set<string>();
    for (const gang of gangs) {
      const free = this.node(gang.nodeId)?.byModel.get(gang.gpuModel);
      for (const i of gang.gpuIndices) {
        const key = `${gang.nodeId}/${i}`;
        if (!free?.includes(i) || seen.has(key)) throw new GangNotFreeError(gang);
        seen.add(key);
      }
    }
    for (const gang of gangs) this.take(gang);
  }

  /** Takes a gang out of the pass's free GPUs. Throws when one of its GPUs is not free: a bug in a policy, never to be written down. */
  take(gang: Gang): void {
    const node = this.node(gang.nodeId);
    const free = node?.byModel.get(gang.gpuModel);
    if (!node || !free || !gang.gpuIndices.every((i) => free.includes(i))) {
      throw new GangNotFreeError(gang);
    }
    const rest = free.filter((i) => !gang.gpuIndices.includes(i));
    if (rest.length > 0) node.byModel.set(gang.gpuModel, rest);
    else node.byModel.delete(gang.gpuModel);
    node.count -= gang.gpuIndices.length;
    this.free -= gang.gpuIndices.length;
  }
}

/** A policy tried to take GPUs that are not free in this pass. */
export class GangNotFreeError extends Error {
  constructor(readonly gang: Gang) {
    super(`GPUs ${gang.gpuIndices.join(',')} (${gang.gpuModel}) of node ${gang.nodeId} are not free in this pass`);
    this.name = 'GangNotFreeError';
  }
}

/** The most GPUs of one model a single node offers (busy or not), and where. */
export interface LargestNode {
  nodeId: string;
  gpuModel: string;
  gpus: number;
}

/** How large the registered nodes are, per model: what a job may ask for at most. Computed once per pass. */
export class NodeSizes {
  private readonly byModel = new Map<string, LargestNode>();
  private any: LargestNode | undefined;
  private readonly totals = new Map<string, number>();

  constructor(nodes: readonly NodeRecord[]) {
    for (const node of nodes) {
      const counts = new Map<string, number>();
      for (const g of node.gpus) counts.set(g.model, (counts.get(g.model) ?? 0) + 1);
      for (const [model, n] of counts) this.totals.set(model, (this.totals.get(model) ?? 0) + n);
      for (const [gpuModel, gpus] of counts) {
        const best = this.byModel.get(gpuModel);
        if (!best || gpus > best.gpus) this.byModel.set(gpuModel, { nodeId: node.nodeId, gpuModel, gpus });
        if (!this.any || gpus > this.any.gpus) this.any = { nodeId: node.nodeId, gpuModel, gpus };
      }
    }
  }

  /** GPUs of `gpuModel` over every node (of the most common model when none is asked): the most a multi-node job may ask for. */
  total(gpuModel: string | undefined): number {
    if (gpuModel !== undefined) return this.totals.get(gpuModel) ?? 0;
    return Math.max(0, ...this.totals.values());
  }

  /** Every model some node offers, sorted. */
  get models(): string[] {
    return [...this.byModel.keys()].sort();
  }

  /**
   * The largest node for a request: most GPUs of `gpuModel` on one node, or of any single model
   * when none is asked. Undefined when no registered node has that model at all.
   */
  largest(gpuModel: string | undefined): LargestNode | undefined {
    return gpuModel === undefined ? this.any : this.byModel.get(gpuModel);
  }
}
