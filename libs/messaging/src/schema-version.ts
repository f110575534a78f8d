import { HEADERS } from '#contracts';
import { IssuesError } from '#errors';

/**
 * A message whose schema version this side does not read: `Gpunet-Schema-Version` (or an event's
 * `metadata.schemaVersion`) names a version the message's consumers do not accept. Terminal: a
 * request gets it as its error reply, an event is dead-lettered with it (`schema_invalid`).
 */
export class UnsupportedSchemaVersionError extends IssuesError {
  readonly code = 'unsupported_schema_version';
}

const DECIMAL = /^[1-9][0-9]*$/;

/**
 * Checks the schema version a message claims against the versions accepted for it (`accepted`,
 * e.g. `acceptedSchemaVersions(name)` of contracts). `header` is the `Gpunet-Schema-Version`
 * value (absent: the sender means the current version); `metadataVersion` an event's
 * `metadata.schemaVersion` (absent: 1). Throws {@link UnsupportedSchemaVersionError} naming the
 * field, the version sent and the versions accepted.
 */
export function checkSchemaVersion(
  what: string,
  accepted: readonly number[],
  header: string | undefined,
  metadataVersion?: number,
): void {
  const list = accepted.join(', ');
  if (header !== undefined && header !== '') {
    if (!DECIMAL.test(header) || !accepted.includes(Number(header))) {
      const message = `${HEADERS.schemaVersion} ${JSON.stringify(header)} is not accepted for ${what}: accepted ${accepted.length === 1 ? 'version' : 'versions'} ${list}`;
      throw new UnsupportedSchemaVersionError(message, [
        { path: HEADERS.schemaVersion, message: `version ${JSON.stringify(header)} is not accepted; accepted: ${list}`, fix: `send \`${HEADERS.schemaVersion}: ${accepted[accepted.length - 1]}\` with a body of that version, or leave the header out for the current one` },
      ]);
    }
  }
  if (metadataVersion !== undefined && !accepted.includes(metadataVersion)) {
    const message = `metadata.schemaVersion ${metadataVersion} is not accepted for ${what}: accepted ${accepted.length === 1 ? 'version' : 'versions'} ${list}`;
    throw new UnsupportedSchemaVersionError(message, [
      { path: 'metadata.schemaVersion', message: `version ${metadataVersion} is not accepted; accepted: ${list}`, fix: `write the event at version ${accepted[accepted.length - 1]}` },
    ]);
  }
}
