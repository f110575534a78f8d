/**
 * `npm run console:api`: writes intake's OpenAPI document to console/src/api/openapi.json, from
 * which `openapi-typescript` generates the console's typed client (console/src/api/schema.d.ts).
 * The console knows intake only through this document: the same one `GET /openapi.json` serves.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { openApiDocument } from '../services/intake/src/http/openapi.js';

const target = fileURLToPath(new URL(import.meta.url.includes('/dist/') ? '../../console/src/api/openapi.json' : '../console/src/api/openapi.json', import.meta.url));
writeFileSync(target, `${JSON.stringify(openApiDocument(), null, 2)}\n`);
process.stdout.write(`console: wrote ${target}\n`);
