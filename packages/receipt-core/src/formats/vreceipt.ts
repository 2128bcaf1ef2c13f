/**
 * A receipt as the claims of the EU wallet consortium's vReceipt credential (EWC ds011, an SD-JWT VC of
 * type VerifiablevReceiptSDJWT, its names those of CEN/TS 16931-8), and the credential configuration an
 * issuer publishes for it. ds011's dotted names are nested here (`PurchaseReceipt.iD` is
 * `{ PurchaseReceipt: { iD } }`); repeated groups (lines, tax subtotals) are arrays. Amounts are decimal
 * numbers in the currency's unit, as the consortium's samples write them.
 */
import {
  currencyExponent,
  decimalAmount,
  lineDiscount,
  lineVat,
  localDate,
  percent,
  ReceiptFormatError,
  type DigitalReceipt12,
} from './receipt.js';

export const VRECEIPT_VCT = 'VerifiablevReceiptSDJWT';

interface ItemProperty {
  itemPropertyName: string;
  value: string;
}

/** The seller as vReceipt names it; the presentable receipt's `Party` claims are these too. */
export interface VReceiptParty {
  partyName_: { name: string };
  partyIdentification_?: { iD: string };
  postalAddress_?: {
    streetName?: string;
    cityName?: string;
    postcode?: string;
    countryIdentifier?: string;
  };
}

export interface VReceiptClaims {
  vct: typeof VRECEIPT_VCT;
  PurchaseReceipt: {
    iD: string;
    issueDate: string;
    documentCurrencyCode: string;
    taxIncludedIndicator: boolean;
    note?: string;
    /** A refund: the receipt of the sale it refunds. */
    salesDocumentReference?: string;
  };
  MonetaryTotal: { lineExtensionAmount: number; taxInclusiveAmount: number; payableAmount: number };
  TaxTotal: { taxAmount: number };
  TaxSubtotal: {
    taxableAmount: number;
    taxSubtotalTaxAmount: number;
    percent: number;
    taxCategory_: string;
  }[];
  AllowanceCharge?: { amount: number; allowanceChargeReason: string }[];
  Party: VReceiptParty;
  PurchaseReceiptLine: {
    iD: string;
    quantity: number;
    taxInclusiveLineExtentionAmount: number;
    allowanceCharge_?: { amount: number; allowanceChargeReason: string };
    item_: { itemInstance_: { additionalItemProperty: ItemProperty[] } };
  }[];
  PaymentMeans: { paymentMeansCode: string };
  CardAccount?: { networkID?: string; accountNumberID: string };
  Payment: { paidAmount: number; transactionID: string; authorizationID?: string };
}

const fail = (field: string, reason: string): never => {
  throw new ReceiptFormatError('vreceipt', field, reason);
};

/**
 * The vReceipt claims of a receipt: its id, date, currency, totals, VAT per rate, lines, seller and card
 * payment. The line amounts include tax, so each line's VAT entry must state its amount (ReceiptFormatError
 * names the first that does not), and the VAT breakdown must be there.
 */
/** The seller's legal name (or trading name), VAT number and postal address; an empty address is left out. */
export function vReceiptParty(merchant: DigitalReceipt12['merchant']): VReceiptParty {
  const address = merchant.address;
  const postal = {
    ...(address?.street ? { streetName: address.street } : {}),
    ...(address?.city ? { cityName: address.city } : {}),
    ...(address?.postalCode ? { postcode: address.postalCode } : {}),
    ...(address?.country ? { countryIdentifier: address.country } : {}),
  };
  return {
    partyName_: { name: merchant.legalName ?? merchant.name },
    ...(merchant.vatId ? { partyIdentification_: { iD: merchant.vatId } } : {}),
    ...(Object.keys(postal).length > 0 ? { postalAddress_: postal } : {}),
  };
}

export function toVReceipt(receipt: DigitalReceipt12): VReceiptClaims {
  const { summary, merchant, transaction } = receipt;
  const exponent = currencyExponent(summary.currency);
  const amount = (minor: number) => Number(decimalAmount(minor, exponent));
  const breakdown = summary.taxBreakdown ?? fail('summary.taxBreakdown', 'is missing');
  const tip = summary.tipAmount ?? 0;
  const lineTotal = receipt.items.reduce((total, item) => total + item.totalPrice, 0);
  const card = transaction.cardDetails;
  const allowances = receipt.allowances ?? [];
  return {
    vct: VRECEIPT_VCT,
    PurchaseReceipt: {
      iD: receipt.receiptId,
      issueDate: localDate(transaction.datetime, transaction.timezone),
      documentCurrencyCode: summary.currency,
      // Line amounts here include tax (taxInclusiveLineExtentionAmount).
      taxIncludedIndicator: true,
      ...(receipt.notes ? { note: receipt.notes } : {}),
      ...(receipt.type === 'refund' && receipt.relatedReceiptId
        ? { salesDocumentReference: receipt.relatedReceiptId }
        : {}),
    },
    MonetaryTotal: {
      lineExtensionAmount: amount(lineTotal),
      taxInclusiveAmount: amount(summary.total - tip),
      payableAmount: amount(summary.total),
    },
    TaxTotal: { taxAmount: amount(summary.totalTax) },
    TaxSubtotal: breakdown.map((entry) => ({
      taxableAmount: amount(entry.taxableAmount),
      taxSubtotalTaxAmount: amount(entry.taxAmount),
      percent: Number(percent(entry.rate)),
      taxCategory_: entry.category,
    })),
    ...(allowances.length > 0
      ? {
          AllowanceCharge: allowances.map((allowance) => ({
            amount: amount(allowance.amount),
            allowanceChargeReason: allowance.reason,
          })),
        }
      : {}),
    Party: vReceiptParty(merchant),
    PurchaseReceiptLine: receipt.items.map((item, index) => {
      const vat = lineVat('vreceipt', item, index);
      const tax = vat.amount ?? fail(`items[${index}].taxes[0].amount`, 'is missing');
      const discount = lineDiscount('vreceipt', item, index);
      const properties: ItemProperty[] = [
        { itemPropertyName: 'name', value: item.name },
        ...(item.sku ? [{ itemPropertyName: 'sku', value: item.sku }] : []),
        ...(item.gtin ? [{ itemPropertyName: 'gtin', value: item.gtin }] : []),
        { itemPropertyName: 'unitCode', value: item.unitCode ?? 'C62' },
        { itemPropertyName: 'unitPrice', value: decimalAmount(item.unitPrice, exponent) },
        { itemPropertyName: 'vatCategory', value: vat.category },
        { itemPropertyName: 'vatRate', value: percent(vat.rate) },
      ];
      return {
        iD: String(index + 1),
        quantity: item.quantity,
        taxInclusiveLineExtentionAmount: amount(item.totalPrice + tax),
        ...(discount !== 0
          ? {
              allowanceCharge_: {
                amount: amount(discount),
                allowanceChargeReason:
                  (item.discounts ?? [])
                    .map((entry) => entry.name)
                    .filter(Boolean)
                    .join('; ') || 'Discount',
              },
            }
          : {}),
        item_: { itemInstance_: { additionalItemProperty: properties } },
      };
    }),
    PaymentMeans: {
      paymentMeansCode:
        transaction.paymentMethod === 'card' ? '48' : transaction.paymentMethod === 'cash' ? '10' : 'ZZZ',
    },
    ...(transaction.paymentMethod === 'card' && card?.last4
      ? { CardAccount: { accountNumberID: card.last4, ...(card.brand ? { networkID: card.brand } : {}) } }
      : {}),
    Payment: {
      paidAmount: amount(summary.total),
      transactionID: transaction.transactionId,
      ...(transaction.authorizationCode ? { authorizationID: transaction.authorizationCode } : {}),
    },
  };
}

/** The dotted ds011 names of the claims toVReceipt can emit, with the label a wallet shows for each. */
export const VRECEIPT_CLAIM_LABELS: Readonly<Record<string, string>> = {
  'PurchaseReceipt.iD': 'Receipt number',
  'PurchaseReceipt.issueDate': 'Date',
  'PurchaseReceipt.documentCurrencyCode': 'Currency',
  'PurchaseReceipt.taxIncludedIndicator': 'Prices include VAT',
  'PurchaseReceipt.note': 'Note',
  'PurchaseReceipt.salesDocumentReference': 'Refund of receipt',
  'MonetaryTotal.lineExtensionAmount': 'Lines, before VAT',
  'MonetaryTotal.taxInclusiveAmount': 'Total with VAT',
  'MonetaryTotal.payableAmount': 'Paid',
  'TaxTotal.taxAmount': 'VAT',
  'TaxSubtotal.taxableAmount': 'Taxable amount',
  'TaxSubtotal.taxSubtotalTaxAmount': 'VAT amount',
  'TaxSubtotal.percent': 'VAT rate (%)',
  'TaxSubtotal.taxCategory_': 'VAT category',
  'AllowanceCharge.amount': 'Discount',
  'AllowanceCharge.allowanceChargeReason': 'Discount reason',
  'Party.partyName_.name': 'Seller',
  'Party.partyIdentification_.iD': 'Seller VAT number',
  'Party.postalAddress_.streetName': 'Street',
  'Party.postalAddress_.cityName': 'City',
  'Party.postalAddress_.postcode': 'Postcode',
  'Party.postalAddress_.countryIdentifier': 'Country',
  'PurchaseReceiptLine.iD': 'Line',
  'PurchaseReceiptLine.quantity': 'Quantity',
  'PurchaseReceiptLine.taxInclusiveLineExtentionAmount': 'Line total with VAT',
  'PurchaseReceiptLine.allowanceCharge_.amount': 'Line discount',
  'PurchaseReceiptLine.allowanceCharge_.allowanceChargeReason': 'Line discount reason',
  'PurchaseReceiptLine.item_.itemInstance_.additionalItemProperty.itemPropertyName': 'Item property',
  'PurchaseReceiptLine.item_.itemInstance_.additionalItemProperty.value': 'Item property value',
  'PaymentMeans.paymentMeansCode': 'Payment means',
  'CardAccount.networkID': 'Card network',
  'CardAccount.accountNumberID': 'Card (last four)',
  'Payment.paidAmount': 'Amount paid',
  'Payment.transactionID': 'Transaction',
  'Payment.authorizationID': 'Authorisation code',
};

export interface VReceiptIssuerDisplay {
  /** The credential's name in the wallet, e.g. "Receipt". */
  name: string;
  locale: string;
  backgroundColor: string;
  textColor: string;
  logo: { uri: string; altText: string };
}

/**
 * The OpenID4VCI credential configuration an issuer publishes for vReceipts, shaped as ds011 requires:
 * every claim toVReceipt can emit, with an English label; the display and signing algorithm are the
 * issuer's own.
 */
export function vReceiptCredentialConfiguration(display: VReceiptIssuerDisplay) {
  return {
    scope: 'vReceipt',
    format: 'vc+sd-jwt',
    vct: VRECEIPT_VCT,
    cryptographic_binding_methods_supported: ['jwk'],
    credential_signing_alg_values_supported: ['ES256'],
    proof_types_supported: { jwt: { proof_signing_alg_values_supported: ['ES256'] } },
    display: [
      {
        name: display.name,
        locale: display.locale,
        background_color: display.backgroundColor,
        text_color: display.textColor,
        logo: { uri: display.logo.uri, alt_text: display.logo.altText },
      },
    ],
    claims: Object.fromEntries(
      Object.entries(VRECEIPT_CLAIM_LABELS).map(([name, label]) => [
        name,
        { display: [{ name: label, locale: 'en' }] },
      ]),
    ),
  };
}
