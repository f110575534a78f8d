import 'reflect-metadata';
import { runServiceMain } from '#service-kit';
import { ledgerService } from './ledger.service.js';

await runServiceMain(ledgerService);
