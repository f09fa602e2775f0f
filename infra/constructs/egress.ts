import { RemovalPolicy } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';

/** The context flag (docs/deploy.md, "Fixed outgoing address"). */
export const FIXED_EGRESS_CONTEXT = 'fixedEgress';

/**
 * Context `fixedEgress`: `true` or `false` (a boolean from cdk.json, a string from `-c`); unset or
 * empty is false. Anything else is refused, so a typo never deploys without the address an
 * operator put into the panels' allowed IPs.
 */
export function fixedEgressFromContext(scope: Construct): boolean {
  const value: unknown = scope.node.tryGetContext(FIXED_EGRESS_CONTEXT);
  if (value === undefined || value === null || value === '' || value === false || value === 'false') return false;
  if (value === true || value === 'true') return true;
  throw new Error(`Context ${FIXED_EGRESS_CONTEXT} must be true or false: got ${JSON.stringify(value)}`);
}

/** What a function needs to run in the VPC: its private subnets (through the NAT) and the egress-only security group. */
export interface FunctionEgress {
  vpc: ec2.IVpc;
  securityGroup: ec2.ISecurityGroup;
}

/**
 * One fixed outgoing IPv4 address for the functions that call panels, so that panel keys can be
 * limited to it (Pterodactyl's `allowed_ips`): a VPC over two availability zones, a public subnet
 * in each, one NAT gateway with its own Elastic IP in the first, and a private subnet in each for
 * the functions, whose default route is that NAT.
 *
 * - One NAT, so one address to allow, at half the price of two (docs/deploy.md): if its zone
 *   fails, the functions still run in the other zone's subnet but cannot reach panels, Secrets
 *   Manager, Cognito's keys or Stripe until it is back. A second NAT would be a second address
 *   and another ≈ $36.50 a month.
 * - A DynamoDB gateway endpoint (free): table traffic, most of what the functions send, stays off
 *   the NAT and its per-GB charge.
 * - No interface endpoints: Secrets Manager (keys cached 5 minutes), SQS, Stripe, Cognito's JWKS and
 *   the panels go through the NAT, a few MB a month, where an endpoint costs ≈ $7.30 a month per zone each.
 * - Flow logs of the whole VPC (accepted and rejected) to a log group kept one month.
 * - The security group of the functions: no inbound rule; outbound TCP to anywhere (panels may
 *   listen on any port). DNS goes to the VPC's resolver, which security groups do not filter.
 */
export class FixedEgress extends Construct {
  readonly vpc: ec2.Vpc;
  /** The NAT gateway's Elastic IP: the functions' outgoing address. */
  readonly address: ec2.CfnEIP;
  readonly securityGroup: ec2.SecurityGroup;
  readonly flowLogs: logs.LogGroup;

  constructor(scope: Construct, id: string) {
    super(scope, id);

    this.address = new ec2.CfnEIP(this, 'NatAddress', { domain: 'vpc' });

    this.vpc = new ec2.Vpc(this, 'Vpc', {
      ipAddresses: ec2.IpAddresses.cidr('10.40.0.0/16'),
      maxAzs: 2,
      natGateways: 1,
      natGatewayProvider: ec2.NatProvider.gateway({ eipAllocationIds: [this.address.attrAllocationId] }),
      subnetConfiguration: [
        { name: 'Public', subnetType: ec2.SubnetType.PUBLIC, cidrMask: 24 },
        // Lambda's network interfaces are shared per subnet and security group: few addresses are used.
        { name: 'Functions', subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS, cidrMask: 24 },
      ],
      gatewayEndpoints: {
        DynamoDb: { service: ec2.GatewayVpcEndpointAwsService.DYNAMODB, subnets: [{ subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS }] },
      },
    });

    this.flowLogs = new logs.LogGroup(this, 'FlowLogs', {
      retention: logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.vpc.addFlowLog('FlowLog', {
      destination: ec2.FlowLogDestination.toCloudWatchLogs(this.flowLogs),
      trafficType: ec2.FlowLogTrafficType.ALL,
    });

    this.securityGroup = new ec2.SecurityGroup(this, 'PanelCallers', {
      vpc: this.vpc,
      description: 'Functions that call panels: no inbound; outbound TCP through the NAT (panels, AWS APIs, Stripe)',
      allowAllOutbound: false,
    });
    this.securityGroup.addEgressRule(ec2.Peer.anyIpv4(), ec2.Port.allTcp(), 'Panels (any port), AWS APIs, Stripe, through the NAT');
  }

  /** What AppFunction takes to place a function here. */
  get functionEgress(): FunctionEgress {
    return { vpc: this.vpc, securityGroup: this.securityGroup };
  }
}
