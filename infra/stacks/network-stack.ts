import { CfnOutput, Fn, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { FixedEgress, type FunctionEgress } from '../constructs/egress.ts';

/**
 * The fixed outgoing address (context `fixedEgress=true`, docs/deploy.md): the VPC, its NAT gateway
 * and Elastic IP, in a stack of its own, present only with the flag. Both the API and the billing
 * stacks place their panel-calling functions in it; neither owns it, so replacing or destroying
 * either never changes the address an operator put into the panel keys' allowed IPs. It needs no
 * table, so it is the same when the app runs on a restored table (context `tableName`).
 * Termination protection: deleting it gives the next deployment a new address.
 */
export class NetworkStack extends Stack {
  readonly egress: FixedEgress;

  constructor(scope: Construct, id: string, props: StackProps = {}) {
    super(scope, id, { terminationProtection: true, ...props });
    this.egress = new FixedEgress(this, 'FixedEgress');
    new CfnOutput(this, 'EgressAddress', {
      value: this.egress.address.attrPublicIp,
      description: "The panel-calling functions' outgoing IPv4 address: add it to each panel key's allowed IPs",
    });
  }

  /**
   * The first two zones of the region as CloudFormation resolves them (`Fn::GetAZs`), also when
   * the stack names its account and region: no availability-zone lookup at synthesis, no
   * cdk.context.json entry, and the same template offline as at deploy.
   */
  override get availabilityZones(): string[] {
    return [Fn.select(0, Fn.getAzs()), Fn.select(1, Fn.getAzs())];
  }

  get functionEgress(): FunctionEgress {
    return this.egress.functionEgress;
  }
}
