/** Partition short form on redis (test/partition/support/short-form.ts); the full form: npm run test:partitions. */
import { shortFormTest } from './support/short-form.js'

shortFormTest('redis', 2703)
