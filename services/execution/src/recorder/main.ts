import 'reflect-metadata';
import { runServiceMain } from '#service-kit';
import { recorderService } from './recorder.service.js';

// node dist/services/execution/src/recorder/main.js   (GPUNET_STORE_URL, GPUNET_NATS_URL, GPUNET_NATS_NKEY_FILE=…/svc-recorder.nk)
await runServiceMain(recorderService);
