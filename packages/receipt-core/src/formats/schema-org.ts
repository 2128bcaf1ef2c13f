/**
 * A receipt as a schema.org Order in JSON-LD, the markup mail clients read (a purchase in the inbox).
 * schema.org has no VAT breakdown: docs/FORMATS.md says what it leaves out.
 */
import { currencyExponent, decimalAmount, type DigitalReceipt12 } from './receipt.js';

export interface SchemaOrgOrder {
  '@context': 'https://schema.org';
  '@type': 'Order';
  orderNumber: string;
  orderDate: string;
  orderStatus: 'https://schema.org/OrderDelivered' | 'https://schema.org/OrderReturned';
  seller: {
    '@type': 'Organization';
    name: string;
    legalName?: string;
    vatID?: string;
    email?: string;
    address?: {
      '@type': 'PostalAddress';
      streetAddress?: string;
      addressLocality?: string;
      addressRegion?: string;
      postalCode?: string;
      addressCountry?: string;
    };
  };
  acceptedOffer: {
    '@type': 'Offer';
    itemOffered: { '@type': 'Product'; name: string; sku?: string; gtin?: string; category?: string };
    price: string;
    priceCurrency: string;
    eligibleQuantity: { '@type': 'QuantitativeValue'; value: number; unitCode: string };
  }[];
  discount?: string;
  discountCurrency?: string;
  partOfInvoice: {
    '@type': 'Invoice';
    identifier: string;
    paymentStatus: 'https://schema.org/PaymentComplete';
    totalPaymentDue: {
      '@type': 'PriceSpecification';
      price: string;
      priceCurrency: string;
      valueAddedTaxIncluded: true;
    };
    paymentMethod?: string;
    referencesOrder?: { '@type': 'Order'; orderNumber: string };
  };
}

/**
 * The receipt as a schema.org Order: its lines as accepted offers (unit price net of tax), the seller, the
 * total paid. A refund receipt is an Order whose status is OrderReturned, its invoice referring to the sale.
 */
export function toSchemaOrgOrder(receipt: DigitalReceipt12): SchemaOrgOrder {
  const { summary, merchant } = receipt;
  const currency = summary.currency;
  const exponent = currencyExponent(currency);
  const money = (minor: number) => decimalAmount(minor, exponent);
  const address = merchant.address;
  const isRefund = receipt.type === 'refund';
  return {
    '@context': 'https://schema.org',
    '@type': 'Order',
    orderNumber: receipt.receiptId,
    orderDate: receipt.transaction.datetime,
    orderStatus: isRefund ? 'https://schema.org/OrderReturned' : 'https://schema.org/OrderDelivered',
    seller: {
      '@type': 'Organization',
      name: merchant.name,
      ...(merchant.legalName ? { legalName: merchant.legalName } : {}),
      ...(merchant.vatId ? { vatID: merchant.vatId } : merchant.taxId ? { vatID: merchant.taxId } : {}),
      ...(merchant.contactEmail ? { email: merchant.contactEmail } : {}),
      ...(address
        ? {
            address: {
              '@type': 'PostalAddress',
              ...(address.street ? { streetAddress: address.street } : {}),
              ...(address.city ? { addressLocality: address.city } : {}),
              ...(address.state ? { addressRegion: address.state } : {}),
              ...(address.postalCode ? { postalCode: address.postalCode } : {}),
              ...(address.country ? { addressCountry: address.country } : {}),
            },
          }
        : {}),
    },
    acceptedOffer: receipt.items.map((item) => ({
      '@type': 'Offer',
      itemOffered: {
        '@type': 'Product',
        name: item.name,
        ...(item.sku ? { sku: item.sku } : {}),
        ...(item.gtin ? { gtin: item.gtin } : {}),
        ...(item.category ? { category: item.category } : {}),
      },
      price: money(item.unitPrice),
      priceCurrency: currency,
      eligibleQuantity: {
        '@type': 'QuantitativeValue',
        value: item.quantity,
        unitCode: item.unitCode ?? 'C62',
      },
    })),
    ...(summary.totalDiscount ? { discount: money(summary.totalDiscount), discountCurrency: currency } : {}),
    partOfInvoice: {
      '@type': 'Invoice',
      identifier: receipt.receiptId,
      paymentStatus: 'https://schema.org/PaymentComplete',
      totalPaymentDue: {
        '@type': 'PriceSpecification',
        price: money(summary.total),
        priceCurrency: currency,
        valueAddedTaxIncluded: true,
      },
      ...(receipt.transaction.paymentMethod === 'card'
        ? { paymentMethod: 'http://purl.org/goodrelations/v1#PaymentMethodCreditCard' }
        : {}),
      ...(isRefund && receipt.relatedReceiptId
        ? { referencesOrder: { '@type': 'Order', orderNumber: receipt.relatedReceiptId } }
        : {}),
    },
  };
}
