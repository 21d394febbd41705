/** A command line the CLI cannot act on: reported with the usage text and exit code 2. */
export class UsageError extends Error {}
