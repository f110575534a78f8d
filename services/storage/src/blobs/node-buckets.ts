import { BlobStore } from '#blobs';
import { NATS_CONNECTION } from '#service-kit';
import type { NatsConnection } from '@nats-io/transport-node';
import { Inject, Injectable } from '@nestjs/common';

/**
 * Each execution node's own bucket, `gpunet-node-<nodeId>` (decision 0025), opened (created when
 * missing: nodes may not create streams) on first use. Storage alone copies between a node's
 * bucket and its teams' buckets.
 */
@Injectable()
export class NodeBuckets {
  private readonly views = new Map<string, Promise<BlobStore>>();

  constructor(@Inject(NATS_CONNECTION) private readonly nc: NatsConnection) {}

  /** The node's view of the object store: every team's blobs under `<team>/<sha256>` in the node's bucket. */
  of(nodeId: string): Promise<BlobStore> {
    let view = this.views.get(nodeId);
    if (!view) {
      view = BlobStore.open(this.nc, { node: nodeId });
      this.views.set(nodeId, view);
    }
    return view;
  }
}
