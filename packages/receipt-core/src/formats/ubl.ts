/**
 * A receipt as an EN 16931 e-invoice in UBL 2.1, Peppol BIS Billing 3.0: an Invoice (380) for a sale, a
 * CreditNote (381) for a refund receipt, whose billing reference is its sale. Paid at the till: the whole
 * amount is prepaid and nothing is due, paid by card (payment means 48) with only the card's last four.
 * docs/FORMATS.md maps each field and says what the invoice leaves out.
 */
import XMLBuilder from 'fast-xml-builder';
import {
  currencyExponent,
  decimalAmount,
  decimalQuantity,
  lineDiscount,
  lineVat,
  localDate,
  percent,
  ReceiptFormatError,
  sum,
  type DigitalReceipt12,
  type DocumentAllowanceCharge,
  type ElectronicAddress,
  type TaxCategory,
} from './receipt.js';

/** The invoice's buyer: who the business cardholder is to their accounting system. */
export interface UblBuyer {
  /** The buyer's legal name (BT-44). */
  name: string;
  /** The buyer's electronic address (BT-49), e.g. its Peppol participant id. */
  endpoint: ElectronicAddress;
  address: { country: string; street?: string; city?: string; postalCode?: string };
  /** The buyer's own reference for the purchase (BT-10), which Peppol requires: a cost centre, an expense id. */
  reference: string;
  /** The buyer's VAT identifier with its country prefix (BT-48). */
  vatId?: string;
}

export interface UblOptions {
  buyer: UblBuyer;
}

const CUSTOMIZATION_ID = 'urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0';
const PROFILE_ID = 'urn:fdc:peppol.eu:2017:poacc:billing:01:1.0';
const NAMESPACES = {
  cac: 'urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2',
  cbc: 'urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2',
};
/** Categories whose breakdown needs an exemption reason (BT-120), which a receipt does not carry. */
const EXEMPT: readonly TaxCategory[] = ['E', 'AE', 'K', 'G', 'O'];
/** UNCL 5189: an allowance that is a discount. */
const DISCOUNT_REASON_CODE = '95';

type Xml = Record<string, unknown>;

const fail = (field: string, reason: string): never => {
  throw new ReceiptFormatError('ubl', field, reason);
};

function required<T>(value: T | null | undefined, field: string): T {
  if (value === undefined || value === null || (typeof value === 'string' && value.trim() === '')) {
    return fail(field, 'is missing');
  }
  return value;
}

const vatScheme = { 'cac:TaxScheme': { 'cbc:ID': 'VAT' } };

/** A VAT category as UBL writes it; category O (outside the scope of VAT) has no rate. */
const taxCategory = (element: string, category: TaxCategory, rate: number): Xml => ({
  [element]: {
    'cbc:ID': category,
    ...(category === 'O' ? {} : { 'cbc:Percent': percent(rate) }),
    ...vatScheme,
  },
});

/**
 * The receipt as a UBL 2.1 Invoice (a sale) or CreditNote (a refund receipt), conforming to EN 16931 and
 * Peppol BIS Billing 3.0. Throws ReceiptFormatError naming the first field the invoice needs and the receipt
 * (or `buyer`) lacks: the seller's legal name, VAT identifier, electronic address and country, each line's
 * VAT category and rate, the VAT breakdown, the buyer's name, address, electronic address and reference.
 * A tip is not part of the invoice (a gratuity is not a supply): the invoice's total is the receipt's less it.
 */
export function toUblInvoice(receipt: DigitalReceipt12, options: UblOptions): string {
  const { merchant, summary } = receipt;
  const isRefund = receipt.type === 'refund';
  const currency = summary.currency;
  const exponent = currencyExponent(currency);
  if (exponent > 2)
    fail('summary.currency', 'has more than two decimals, which EN 16931 amounts cannot carry');
  const money = (minor: number): Xml => ({
    '#text': decimalAmount(minor, exponent),
    '@_currencyID': currency,
  });

  // The seller.
  const legalName = required(merchant.legalName, 'merchant.legalName');
  const endpoint = required(merchant.endpoint, 'merchant.endpoint');
  const country = required(merchant.address?.country, 'merchant.address.country');

  // The buyer.
  const buyer = required(options?.buyer, 'buyer');
  required(buyer.name, 'buyer.name');
  required(buyer.endpoint, 'buyer.endpoint');
  required(buyer.endpoint.scheme, 'buyer.endpoint.scheme');
  required(buyer.endpoint.id, 'buyer.endpoint.id');
  required(buyer.address?.country, 'buyer.address.country');
  required(buyer.reference, 'buyer.reference');

  assertXmlText(receipt, buyer);

  // The lines, each with its one VAT category and rate.
  if (receipt.items.length === 0) {
    fail(
      'items',
      'is empty: an invoice or credit note needs at least one line (BR-16); a refund of an amount names none',
    );
  }
  const lines = receipt.items.map((item, index) => ({
    item,
    name: required(item.name, `items[${index}].name`),
    vat: lineVat('ubl', item, index),
    discount: lineDiscount('ubl', item, index),
  }));

  // The VAT breakdown, as the receipt states it.
  const breakdown = required(summary.taxBreakdown, 'summary.taxBreakdown');
  if (breakdown.length === 0) fail('summary.taxBreakdown', 'is empty');
  if (sum(breakdown.map((entry) => entry.taxAmount)) !== summary.totalTax) {
    fail('summary.taxBreakdown', `does not add up to summary.totalTax (${summary.totalTax})`);
  }
  breakdown.forEach((entry, index) => {
    if (EXEMPT.includes(entry.category)) {
      fail(
        `summary.taxBreakdown[${index}].category`,
        `is ${entry.category}, which needs a VAT exemption reason (BT-120) that a receipt does not carry`,
      );
    }
  });
  const vatCategories = new Set([
    ...lines.map((line) => line.vat.category),
    ...breakdown.map((entry) => entry.category),
  ]);
  if ([...vatCategories].some((category) => category !== 'O')) {
    const vatId = required(merchant.vatId, 'merchant.vatId');
    if (!/^[A-Z]{2}/.test(vatId))
      fail('merchant.vatId', 'must begin with its ISO 3166-1 country prefix (BR-CO-09)');
  }

  // The totals: paid in full at the till, the tip aside.
  const allowances = receipt.allowances ?? [];
  const charges = receipt.charges ?? [];
  const lineTotal = sum(receipt.items.map((item) => item.totalPrice));
  const allowanceTotal = sum(allowances.map((allowance) => allowance.amount));
  const chargeTotal = sum(charges.map((charge) => charge.amount));
  const taxExclusive = lineTotal - allowanceTotal + chargeTotal;
  const taxInclusive = taxExclusive + summary.totalTax;
  const tip = summary.tipAmount ?? 0;
  if (taxInclusive + tip !== summary.total) {
    fail(
      'summary.total',
      `is not the lines (${lineTotal}) less allowances (${allowanceTotal}) plus charges (${chargeTotal}) plus totalTax (${summary.totalTax}) plus tipAmount (${tip})`,
    );
  }

  const card = receipt.transaction.cardDetails;
  const paymentMeans: Xml = {
    'cbc:PaymentMeansCode': paymentMeansCode(receipt),
    ...(receipt.transaction.paymentMethod === 'card' && card?.last4
      ? {
          'cac:CardAccount': {
            'cbc:PrimaryAccountNumberID': card.last4,
            'cbc:NetworkID': required(card.brand, 'transaction.cardDetails.brand'),
          },
        }
      : {}),
  };

  const documentAllowanceCharge = (entry: DocumentAllowanceCharge, charge: boolean, index: number): Xml => ({
    'cbc:ChargeIndicator': String(charge),
    'cbc:AllowanceChargeReason': required(
      entry.reason,
      `${charge ? 'charges' : 'allowances'}[${index}].reason`,
    ),
    'cbc:Amount': money(entry.amount),
    ...taxCategory('cac:TaxCategory', entry.category, entry.rate),
  });

  const quantityElement = isRefund ? 'cbc:CreditedQuantity' : 'cbc:InvoicedQuantity';
  const documentLines = lines.map(({ item, name, vat, discount }, index) => ({
    'cbc:ID': String(index + 1),
    [quantityElement]: { '#text': decimalQuantity(item.quantity), '@_unitCode': item.unitCode ?? 'C62' },
    'cbc:LineExtensionAmount': money(item.totalPrice),
    ...(discount !== 0
      ? {
          'cac:AllowanceCharge': {
            'cbc:ChargeIndicator': 'false',
            'cbc:AllowanceChargeReasonCode': DISCOUNT_REASON_CODE,
            ...(discountNames(item) ? { 'cbc:AllowanceChargeReason': discountNames(item) } : {}),
            'cbc:Amount': money(discount),
          },
        }
      : {}),
    'cac:Item': {
      ...(present(item.description) ? { 'cbc:Description': item.description } : {}),
      'cbc:Name': name,
      ...(present(item.sku) ? { 'cac:SellersItemIdentification': { 'cbc:ID': item.sku } } : {}),
      ...(item.gtin
        ? { 'cac:StandardItemIdentification': { 'cbc:ID': { '#text': item.gtin, '@_schemeID': '0160' } } }
        : {}),
      ...taxCategory('cac:ClassifiedTaxCategory', vat.category, vat.rate),
    },
    'cac:Price': { 'cbc:PriceAmount': money(item.unitPrice) },
  }));

  const root = isRefund ? 'CreditNote' : 'Invoice';
  const document: Xml = {
    '@_xmlns': `urn:oasis:names:specification:ubl:schema:xsd:${root}-2`,
    '@_xmlns:cac': NAMESPACES.cac,
    '@_xmlns:cbc': NAMESPACES.cbc,
    'cbc:CustomizationID': CUSTOMIZATION_ID,
    'cbc:ProfileID': PROFILE_ID,
    'cbc:ID': receipt.receiptId,
    'cbc:IssueDate': localDate(receipt.transaction.datetime, receipt.transaction.timezone),
    [isRefund ? 'cbc:CreditNoteTypeCode' : 'cbc:InvoiceTypeCode']: isRefund ? '381' : '380',
    ...(present(receipt.notes) ? { 'cbc:Note': receipt.notes } : {}),
    'cbc:DocumentCurrencyCode': currency,
    'cbc:BuyerReference': buyer.reference,
    ...(isRefund
      ? {
          'cac:BillingReference': {
            'cac:InvoiceDocumentReference': {
              'cbc:ID': required(receipt.relatedReceiptId, 'relatedReceiptId'),
            },
          },
        }
      : {}),
    ...(receipt.receiptCode
      ? {
          'cac:AdditionalDocumentReference': {
            'cbc:ID': receipt.receiptCode.value,
            'cbc:DocumentDescription': `Receipt code (${receipt.receiptCode.symbology})`,
          },
        }
      : {}),
    'cac:AccountingSupplierParty': {
      'cac:Party': {
        'cbc:EndpointID': { '#text': endpoint.id, '@_schemeID': endpoint.scheme },
        'cac:PartyName': { 'cbc:Name': required(merchant.name, 'merchant.name') },
        'cac:PostalAddress': address(merchant.address ?? {}, country),
        ...(merchant.vatId
          ? { 'cac:PartyTaxScheme': { 'cbc:CompanyID': merchant.vatId, ...vatScheme } }
          : {}),
        'cac:PartyLegalEntity': { 'cbc:RegistrationName': legalName },
        ...(present(merchant.contactEmail) || present(merchant.contactPhone)
          ? {
              'cac:Contact': {
                ...(present(merchant.contactPhone) ? { 'cbc:Telephone': merchant.contactPhone } : {}),
                ...(present(merchant.contactEmail) ? { 'cbc:ElectronicMail': merchant.contactEmail } : {}),
              },
            }
          : {}),
      },
    },
    'cac:AccountingCustomerParty': {
      'cac:Party': {
        'cbc:EndpointID': { '#text': buyer.endpoint.id, '@_schemeID': buyer.endpoint.scheme },
        'cac:PostalAddress': address(
          { street: buyer.address.street, city: buyer.address.city, postalCode: buyer.address.postalCode },
          buyer.address.country,
        ),
        ...(present(buyer.vatId)
          ? { 'cac:PartyTaxScheme': { 'cbc:CompanyID': buyer.vatId, ...vatScheme } }
          : {}),
        'cac:PartyLegalEntity': { 'cbc:RegistrationName': buyer.name },
      },
    },
    'cac:PaymentMeans': paymentMeans,
    ...(allowances.length + charges.length > 0
      ? {
          'cac:AllowanceCharge': [
            ...charges.map((charge, index) => documentAllowanceCharge(charge, true, index)),
            ...allowances.map((allowance, index) => documentAllowanceCharge(allowance, false, index)),
          ],
        }
      : {}),
    'cac:TaxTotal': {
      'cbc:TaxAmount': money(summary.totalTax),
      'cac:TaxSubtotal': breakdown.map((entry) => ({
        'cbc:TaxableAmount': money(entry.taxableAmount),
        'cbc:TaxAmount': money(entry.taxAmount),
        ...taxCategory('cac:TaxCategory', entry.category, entry.rate),
      })),
    },
    'cac:LegalMonetaryTotal': {
      'cbc:LineExtensionAmount': money(lineTotal),
      'cbc:TaxExclusiveAmount': money(taxExclusive),
      'cbc:TaxInclusiveAmount': money(taxInclusive),
      ...(allowances.length > 0 ? { 'cbc:AllowanceTotalAmount': money(allowanceTotal) } : {}),
      ...(charges.length > 0 ? { 'cbc:ChargeTotalAmount': money(chargeTotal) } : {}),
      'cbc:PrepaidAmount': money(taxInclusive),
      'cbc:PayableAmount': money(0),
    },
    [isRefund ? 'cac:CreditNoteLine' : 'cac:InvoiceLine']: documentLines,
  };

  const builder = new XMLBuilder({
    ignoreAttributes: false,
    attributeNamePrefix: '@_',
    format: true,
    indentBy: '  ',
    suppressEmptyNode: true,
  });
  return `<?xml version="1.0" encoding="UTF-8"?>\n${builder.build({ [root]: document }) as string}`;
}

/** UNCL 4461: 48 a bank card, 10 cash; anything else (a wallet, a transfer) mutually defined. */
function paymentMeansCode(receipt: DigitalReceipt12): string {
  switch (receipt.transaction.paymentMethod) {
    case 'card':
      return '48';
    case 'cash':
      return '10';
    default:
      return 'ZZZ';
  }
}

/** Characters XML 1.0 cannot carry at all (control characters but tab, line feed and carriage return). */
// eslint-disable-next-line no-control-regex
const NOT_XML = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/;

/** Every text of the receipt and the buyer the invoice writes, by the field it comes from. */
function assertXmlText(receipt: DigitalReceipt12, buyer: UblBuyer): void {
  const { merchant } = receipt;
  const texts: [string, string | null | undefined][] = [
    ['merchant.name', merchant.name],
    ['merchant.legalName', merchant.legalName],
    ['merchant.vatId', merchant.vatId],
    ['merchant.contactEmail', merchant.contactEmail],
    ['merchant.contactPhone', merchant.contactPhone],
    ...Object.entries(merchant.address ?? {}).map(([part, value]): [string, string | undefined] => [
      `merchant.address.${part}`,
      value,
    ]),
    ['notes', receipt.notes],
    ['receiptCode.value', receipt.receiptCode?.value],
    ...receipt.items.flatMap((item, index): [string, string | null | undefined][] => [
      [`items[${index}].name`, item.name],
      [`items[${index}].description`, item.description],
      [`items[${index}].sku`, item.sku],
      ...(item.discounts ?? []).map((discount, at): [string, string | undefined] => [
        `items[${index}].discounts[${at}].name`,
        discount.name,
      ]),
    ]),
    ...(receipt.allowances ?? []).map((entry, index): [string, string] => [
      `allowances[${index}].reason`,
      entry.reason,
    ]),
    ...(receipt.charges ?? []).map((entry, index): [string, string] => [
      `charges[${index}].reason`,
      entry.reason,
    ]),
    ['buyer.name', buyer.name],
    ['buyer.reference', buyer.reference],
    ['buyer.vatId', buyer.vatId],
    ['buyer.address.street', buyer.address.street],
    ['buyer.address.city', buyer.address.city],
    ['buyer.address.postalCode', buyer.address.postalCode],
  ];
  for (const [field, value] of texts) {
    if (typeof value === 'string' && NOT_XML.test(value))
      fail(field, 'holds a control character, which XML cannot carry');
  }
}

/** Text worth an element: Peppol refuses empty ones (PEPPOL-EN16931-R008), whitespace counting as empty. */
const present = (value: string | null | undefined): value is string =>
  value !== undefined && value !== null && value.trim() !== '';

const discountNames = (item: DigitalReceipt12['items'][number]): string =>
  (item.discounts ?? [])
    .map((discount) => discount.name)
    .filter(present)
    .join('; ');

function address(
  parts: {
    street?: string | undefined;
    city?: string | undefined;
    postalCode?: string | undefined;
    state?: string | undefined;
  },
  country: string,
): Xml {
  return {
    ...(present(parts.street) ? { 'cbc:StreetName': parts.street } : {}),
    ...(present(parts.city) ? { 'cbc:CityName': parts.city } : {}),
    ...(present(parts.postalCode) ? { 'cbc:PostalZone': parts.postalCode } : {}),
    ...(present(parts.state) ? { 'cbc:CountrySubentity': parts.state } : {}),
    'cac:Country': { 'cbc:IdentificationCode': country },
  };
}
