import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DescribeTableCommand, DynamoDBClient, ExportTableToPointInTimeCommand, paginateListTables } from '@aws-sdk/client-dynamodb';

/**
 * An operator's backup of the table to S3 (docs/operations.md, "Backups of the table"): DynamoDB's
 * ExportTableToPointInTime, a full export in DynamoDB JSON of the table as it was at `--at` (default:
 * now), read from the point-in-time recovery log, so it takes no read capacity and does not slow
 * the API. The export runs in AWS (minutes to hours); this prints its ARN and the command to watch it.
 *
 *   npm run export-table -- --bucket B [--prefix P] [--table T | --stage S] [--at ISO] [--bucket-owner ACCOUNT]
 *
 * Without `--table`, the table is the one the data stack made: the only table named
 * `<stage->ControlPlaneData-Table…` (CloudFormation's name for it). Credentials and region are the
 * AWS SDK's usual ones (AWS_PROFILE, AWS_REGION, …).
 */
export interface ExportOptions {
  bucket: string;
  prefix?: string;
  table?: string;
  stage?: string;
  at?: Date;
  bucketOwner?: string;
}

export const USAGE =
  'usage: npm run export-table -- --bucket B [--prefix P] [--table T | --stage S] [--at 2026-11-26T08:00:00Z] [--bucket-owner ACCOUNT]';

/** The command line as options; a clear message (and no export) for anything else. */
export function parseExportArgs(argv: string[]): ExportOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      bucket: { type: 'string' },
      prefix: { type: 'string' },
      table: { type: 'string' },
      stage: { type: 'string' },
      at: { type: 'string' },
      'bucket-owner': { type: 'string' },
    },
    strict: true,
    allowPositionals: false,
  });
  if (!values.bucket) throw new Error(`--bucket is required\n${USAGE}`);
  if (values.table && values.stage) throw new Error(`--table and --stage: give one\n${USAGE}`);
  let at: Date | undefined;
  if (values.at !== undefined) {
    at = new Date(values.at);
    if (Number.isNaN(at.getTime())) throw new Error(`--at ${values.at}: not a date and time (ISO 8601, e.g. 2026-11-26T08:00:00Z)`);
  }
  return {
    bucket: values.bucket,
    ...(values.prefix ? { prefix: values.prefix } : {}),
    ...(values.table ? { table: values.table } : {}),
    ...(values.stage ? { stage: values.stage } : {}),
    ...(at ? { at } : {}),
    ...(values['bucket-owner'] ? { bucketOwner: values['bucket-owner'] } : {}),
  };
}

/** The data stack's table: the one table whose name starts with `<stage->ControlPlaneData-Table`. */
export async function findStackTable(client: DynamoDBClient, stage?: string): Promise<string> {
  const prefix = `${stage ? `${stage}-` : ''}ControlPlaneData-Table`;
  const found: string[] = [];
  for await (const page of paginateListTables({ client }, {})) {
    found.push(...(page.TableNames ?? []).filter((name) => name.startsWith(prefix)));
  }
  if (found.length === 1) return found[0]!;
  throw new Error(
    found.length === 0
      ? `No table named ${prefix}… in this account and region: pass --table (or --stage)`
      : `Several tables named ${prefix}… (${found.join(', ')}): pass --table`,
  );
}

/** Starts the export; answers its ARN. */
export async function startExport(client: DynamoDBClient, options: ExportOptions): Promise<{ exportArn: string; tableArn: string }> {
  const tableName = options.table ?? (await findStackTable(client, options.stage));
  const table = await client.send(new DescribeTableCommand({ TableName: tableName }));
  const tableArn = table.Table?.TableArn;
  if (!tableArn) throw new Error(`Table ${tableName}: DescribeTable returned no ARN`);
  const out = await client.send(
    new ExportTableToPointInTimeCommand({
      TableArn: tableArn,
      S3Bucket: options.bucket,
      ...(options.prefix ? { S3Prefix: options.prefix } : {}),
      ...(options.bucketOwner ? { S3BucketOwner: options.bucketOwner } : {}),
      ...(options.at ? { ExportTime: options.at } : {}),
      ExportFormat: 'DYNAMODB_JSON',
      ExportType: 'FULL_EXPORT',
    }),
  );
  const exportArn = out.ExportDescription?.ExportArn;
  if (!exportArn) throw new Error('ExportTableToPointInTime returned no export ARN');
  return { exportArn, tableArn };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    const options = parseExportArgs(process.argv.slice(2));
    const client = new DynamoDBClient({});
    const { exportArn, tableArn } = await startExport(client, options);
    console.log(`Export started: ${tableArn} → s3://${options.bucket}/${options.prefix ?? ''}`);
    console.log(exportArn);
    console.log('Watch it (IN_PROGRESS, then COMPLETED or FAILED):');
    console.log(
      `  aws dynamodb describe-export --export-arn ${exportArn} --query 'ExportDescription.[ExportStatus,ExportedRecordCount,BilledSizeBytes,FailureMessage]'`,
    );
  } catch (err) {
    console.error(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
  }
}
