import { BlobStore } from '#blobs';
import { GpunetError } from '#errors';
import { NATS_CONNECTION, SERVICE_CONFIG } from '#service-kit';
import type { NatsConnection } from '@nats-io/transport-node';
import { Inject, Injectable } from '@nestjs/common';
import { Server } from '@tus/server';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Principal } from '../auth/api-keys.js';
import { Authenticator } from '../auth/authenticator.js';
import { authorize } from '../auth/permissions.js';
import { IntakeConfig } from '../config.js';
import { BlobDataStore, tusError } from './blob-data-store.js';
import { parseUploadId, uploadId, uploadOfPath, uploadPath } from './upload-id.js';

/** Where HTTP uploads live. */
export const UPLOADS_PATH = '/v1/uploads';

/** What a tus request carries that intake reads: its headers. */
interface TusRequest {
  headers: { get(name: string): string | null };
}

const HTTP_STATUS: Record<string, number> = { unauthorized: 401, forbidden: 403, validation_failed: 400 };

/**
 * HTTP uploads by the tus 1.0 protocol (`@tus/server`; creation, creation-with-upload,
 * termination): `POST /v1/uploads` with `Upload-Length` and `Upload-Metadata: sha256 <base64>`
 * creates the upload `/v1/uploads/<sha256>.<size>` of the caller's team; `HEAD` says how many
 * bytes are stored (`Upload-Offset`); `PATCH` sends bytes from there; `DELETE` gives it up. The
 * bytes land in the team's content-addressed bucket (`BlobDataStore`), visible as the blob once
 * they hash to the address. Every request needs `Authorization: Bearer <key>` of a role that may
 * submit jobs; the team is the key's, never the URL's.
 */
@Injectable()
export class Uploads {
  private readonly server: Server;
  private blobs: Promise<BlobStore> | undefined;

  constructor(
    private readonly auth: Authenticator,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(SERVICE_CONFIG) config: IntakeConfig,
  ) {
    const store = new BlobDataStore(() => this.blobStore());
    this.server = new Server({
      path: UPLOADS_PATH,
      datastore: store,
      maxSize: config.GPUNET_UPLOAD_MAX_BYTES,
      respectForwardedHeaders: false,
      disableTerminationForFinishedUploads: true,
      exposedHeaders: ['Gpunet-Sha256'],
      namingFunction: (req, metadata) => {
        const principal = this.principal(req);
        const sha256 = metadata?.sha256 ?? '';
        const length = req.headers.get('upload-length') ?? '';
        const ref = uploadOfPath(principal.team, `${sha256}.${length}`);
        if (!ref) {
          throw tusError(
            400,
            'validation_failed',
            'an upload names the blob it will be: `Upload-Metadata: sha256 <base64 of the lowercase hex sha256>` and `Upload-Length: <bytes>` (a deferred length is not taken); hash the file first',
          );
        }
        return uploadId(ref);
      },
      generateUrl: (_req, { proto, host, path, id }) => `${proto}://${host}${path}/${uploadPath(parseUploadId(id)!)}`,
      getFileIdFromRequest: (req, lastPath) => {
        const principal = this.principal(req);
        const ref = lastPath === undefined ? undefined : uploadOfPath(principal.team, lastPath);
        return ref ? uploadId(ref) : undefined;
      },
      onUploadFinish: (_req, upload) => Promise.resolve({ headers: { 'Gpunet-Sha256': parseUploadId(upload.id)?.sha256 ?? '' } }),
    });
  }

  /** Serves one tus request (any method under {@link UPLOADS_PATH}). */
  handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    return this.server.handle(req, res);
  }

  /** The caller, allowed to upload; a tus error answer otherwise. */
  private principal(req: TusRequest): Principal {
    try {
      const principal = this.auth.fromHttp(req.headers.get('authorization') ?? undefined);
      authorize(principal, 'jobs:submit');
      return principal;
    } catch (err) {
      if (err instanceof GpunetError) throw tusError(HTTP_STATUS[err.code] ?? 500, err.code, err.message);
      throw err;
    }
  }

  private blobStore(): Promise<BlobStore> {
    // The team's bucket is made with the team by the control plane; intake creates nothing.
    this.blobs ??= BlobStore.open(this.nc, { create: false }).catch((err: unknown) => {
      this.blobs = undefined;
      throw err;
    });
    return this.blobs;
  }
}
