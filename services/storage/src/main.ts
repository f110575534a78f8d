import 'reflect-metadata';
import { runService } from '#service-kit';
import { storageService } from './storage.service.js';

await runService(storageService);
