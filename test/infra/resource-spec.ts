import { loadAwsServiceSpecSync } from '@aws-cdk/aws-service-spec';
import type {
  PropertyType,
  Resource as SpecResource,
  ResourceProperties as SpecProperties,
  SpecDatabase,
} from '@aws-cdk/service-spec-types';

/*
 * Checks a template's resources against CloudFormation's published resource specification, as AWS
 * publishes it in `@aws-cdk/aws-service-spec` (Apache-2.0, a devDependency): db.json.gz, the database
 * CDK generates its L1 constructs from, built from CloudFormation's resource provider schemas and the
 * older CloudFormationResourceSpecification.json. Nothing of it is typed here by hand; updating the
 * package updates the spec (0.1.216, published 2026-09-29). `@aws-cdk/cfnspec`, the older artefact,
 * stopped at 2.72.1 (2024-12); CDK itself has moved to this one.
 *
 * What it checks, for each resource: the type exists; every property is one the spec lists for the
 * type, at every depth of nested types; required properties are there; a literal value has the spec's
 * shape (string, number, integer, boolean, list, map, tag or nested type), and a string or integer
 * the spec enumerates is one of its values. An intrinsic function stands for any value, except that a
 * string-building one (Fn::Join, Fn::Sub, Fn::Base64) cannot stand for a list or an object, and each
 * branch of an Fn::If is checked as the value itself. Strings for numbers and booleans ("10", "true")
 * pass, as CloudFormation converts them.
 */

/** The spec as loaded: about 1.5 s, so a test file loads it once. */
export type ResourceSpec = SpecDatabase;
export const loadResourceSpec = (): ResourceSpec => loadAwsServiceSpecSync();

interface TemplateResource {
  Type?: unknown;
  Properties?: unknown;
  [attribute: string]: unknown;
}

/** The attributes CloudFormation allows beside Type and Properties. */
const resourceAttributes = new Set([
  'Type',
  'Properties',
  'DependsOn',
  'Condition',
  'Metadata',
  'DeletionPolicy',
  'UpdateReplacePolicy',
  'UpdatePolicy',
  'CreationPolicy',
]);

/**
 * Types CloudFormation accepts that the spec does not list. AWS::CDK::Metadata is CDK's version
 * report (analytics), a type CloudFormation handles itself and publishes no schema for.
 */
const unlistedTypes = new Set(['AWS::CDK::Metadata']);

/** `Custom::Name` is a custom resource: the spec's AWS::CloudFormation::CustomResource plus any property. */
const customResourceType = 'AWS::CloudFormation::CustomResource';
const isCustomType = (type: string): boolean => type.startsWith('Custom::');

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** `{ Ref: … }`, `{ "Fn::…": … }`: one key, an intrinsic function's name. */
const intrinsicOf = (value: unknown): { name: string; argument: unknown } | undefined => {
  if (!isObject(value)) return undefined;
  const keys = Object.keys(value);
  if (keys.length !== 1) return undefined;
  const [name] = keys as [string];
  return name === 'Ref' || name.startsWith('Fn::') ? { name, argument: value[name] } : undefined;
};
const stringBuilders = new Set(['Fn::Join', 'Fn::Sub', 'Fn::Base64']);

/** Numbers and booleans CloudFormation reads from strings, as it does when it converts a template. */
const isIntegerText = (value: unknown): boolean => typeof value === 'string' && /^-?\d+$/.test(value);
const isNumberText = (value: unknown): boolean =>
  typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value));

export class ResourceSpecChecker {
  constructor(private readonly spec: ResourceSpec) {}

  /** Every way the template's resources depart from the spec, one line each; empty when none do. */
  checkTemplate(template: { Resources?: Record<string, unknown> }): string[] {
    return Object.entries(template.Resources ?? {}).flatMap(([id, resource]) =>
      this.checkResource(id, resource),
    );
  }

  checkResource(id: string, resource: unknown): string[] {
    if (!isObject(resource)) return [`${id}: not an object`];
    const { Type: type, Properties: properties } = resource as TemplateResource;
    const problems = Object.keys(resource)
      .filter((attribute) => !resourceAttributes.has(attribute))
      .map((attribute) => `${id}: ${attribute} is not a resource attribute`);
    if (typeof type !== 'string') return [...problems, `${id}: no Type`];
    if (unlistedTypes.has(type)) return problems;
    const entry = this.resourceType(isCustomType(type) ? customResourceType : type);
    if (!entry) return [...problems, `${id}: ${type} is not a resource type of the spec`];
    if (properties !== undefined && !isObject(properties))
      return [...problems, `${id} (${type}): Properties is not an object`];
    return [
      ...problems,
      ...this.checkObject(`${id} (${type})`, properties ?? {}, entry.properties, isCustomType(type)),
    ];
  }

  private resourceType(type: string): SpecResource | undefined {
    return this.spec.lookup('resource', 'cloudFormationType', 'equals', type)[0];
  }

  private checkObject(
    path: string,
    value: Record<string, unknown>,
    properties: SpecProperties,
    openEnded = false,
  ): string[] {
    const problems: string[] = [];
    for (const [name, property] of Object.entries(properties)) {
      if (property.required && !(name in value)) problems.push(`${path}: required ${name} is missing`);
    }
    for (const [name, inner] of Object.entries(value)) {
      const property = properties[name];
      if (!property) {
        if (!openEnded) problems.push(`${path}: ${name} is not a property the spec lists`);
        continue;
      }
      // A value of a type the property had before is one CloudFormation still takes.
      const types = [property.type, ...(property.previousTypes ?? [])];
      const attempts = types.map((type) => this.checkValue(`${path}.${name}`, inner, type));
      if (attempts.every((attempt) => attempt.length > 0)) problems.push(...(attempts[0] ?? []));
    }
    return problems;
  }

  private checkValue(path: string, value: unknown, type: PropertyType): string[] {
    const intrinsic = intrinsicOf(value);
    if (intrinsic) return this.checkIntrinsic(path, intrinsic, type);
    const wrong = (expected: string): string[] => [`${path}: ${JSON.stringify(value)} is not ${expected}`];
    switch (type.type) {
      case 'string':
        if (typeof value !== 'string') return wrong('a string');
        return !type.allowedValues || type.allowedValues.includes(value)
          ? []
          : wrong(`one of ${type.allowedValues.join(', ')}`);
      case 'date-time':
        return typeof value === 'string' ? [] : wrong('a string');
      case 'integer':
        if (!Number.isInteger(value) && !isIntegerText(value)) return wrong('an integer');
        return !type.allowedValues || type.allowedValues.includes(Number(value))
          ? []
          : wrong(`one of ${type.allowedValues.join(', ')}`);
      case 'number':
        return (typeof value === 'number' && Number.isFinite(value)) || isNumberText(value)
          ? []
          : wrong('a number');
      case 'boolean':
        return typeof value === 'boolean' || value === 'true' || value === 'false' ? [] : wrong('a boolean');
      case 'json':
        return isObject(value) || Array.isArray(value) || typeof value === 'string' ? [] : wrong('JSON');
      case 'null':
        return value === null ? [] : wrong('null');
      case 'tag':
        return isObject(value)
          ? this.checkObject(path, value, {
              Key: { type: { type: 'string' }, required: true },
              Value: { type: { type: 'string' }, required: true },
            })
          : wrong('a tag');
      case 'array':
        return Array.isArray(value)
          ? value.flatMap((element, index) => this.checkValue(`${path}[${index}]`, element, type.element))
          : wrong('a list');
      case 'map':
        return isObject(value)
          ? Object.entries(value).flatMap(([key, inner]) =>
              this.checkValue(`${path}.${key}`, inner, type.element),
            )
          : wrong('a map');
      case 'ref': {
        const definition = this.spec.get('typeDefinition', type.reference.$ref);
        return isObject(value)
          ? this.checkObject(path, value, definition.properties)
          : wrong(`an object (${definition.name})`);
      }
      case 'union': {
        const attempts = type.types.map((member) => this.checkValue(path, value, member));
        return attempts.some((attempt) => attempt.length === 0)
          ? []
          : [`${path}: ${JSON.stringify(value)} matches none of its types: ${attempts.flat().join('; ')}`];
      }
    }
  }

  private checkIntrinsic(
    path: string,
    intrinsic: { name: string; argument: unknown },
    type: PropertyType,
  ): string[] {
    if (intrinsic.name === 'Fn::If') {
      const branches = Array.isArray(intrinsic.argument) ? intrinsic.argument.slice(1) : [];
      if (branches.length !== 2) return [`${path}: Fn::If takes [condition, then, else]`];
      return branches.flatMap((branch, index) => {
        const isNoValue = isObject(branch) && branch.Ref === 'AWS::NoValue';
        return isNoValue
          ? []
          : this.checkValue(`${path}<Fn::If ${index === 0 ? 'then' : 'else'}>`, branch, type);
      });
    }
    const wantsStructure = ['array', 'map', 'ref', 'tag'].includes(type.type);
    return wantsStructure && stringBuilders.has(intrinsic.name)
      ? [
          `${path}: ${intrinsic.name} makes a string, where the spec wants ${type.type === 'ref' ? 'an object' : `a ${type.type}`}`,
        ]
      : [];
  }
}
