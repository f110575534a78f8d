import 'reflect-metadata';
import { runServiceMain } from '#service-kit';
import { agentEnvironment } from './cli.js';
import { executionService } from './execution.service.js';

// node dist/services/execution/src/main.js --gpus N --gpu-model NAME [--node-id ID] [--work-dir DIR]
let env: NodeJS.ProcessEnv;
try {
  env = agentEnvironment(process.argv.slice(2));
} catch (err) {
  process.stderr.write(`execution: cannot start: ${(err as Error).message}\n`);
  process.exit(2);
}
await runServiceMain({ ...executionService, env });
