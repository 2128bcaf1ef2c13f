/*
 * Validates e-invoices by the official artefacts in one JVM: the OASIS UBL 2.1 schemas (javax.xml.validation,
 * built into the JDK) and Schematron rules compiled to XSLT 2, run by Saxon-HE (Debian's libsaxonhe-java).
 * test/support/standards.ts runs it as `java -cp Saxon-HE.jar Validate.java ...` (Java's single-file source
 * launcher: nothing to build or vendor) and reads its JSON from stdout.
 *
 *   java -cp Saxon-HE.jar Validate.java --xsd Invoice=<xsd> --xsd CreditNote=<xsd>
 *        --rules <name>=<xslt> ... -- <file> ...
 *
 * A document is checked against the schema named by its root element's local name and by every rule set. A
 * file whose root is a VEFA testSet (the EN 16931 repository's unit tests) is a list of tests instead: each
 * test's embedded document is checked by the rule sets only (those snippets are not meant to be
 * schema-valid), and its expected rule ids are reported beside the result so the caller can compare them.
 */
import java.io.File;
import java.io.StringReader;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.xml.XMLConstants;
import javax.xml.transform.stream.StreamSource;
import javax.xml.validation.Schema;
import javax.xml.validation.SchemaFactory;
import javax.xml.validation.Validator;
import net.sf.saxon.s9api.Processor;
import net.sf.saxon.s9api.XPathCompiler;
import net.sf.saxon.s9api.XdmDestination;
import net.sf.saxon.s9api.XdmItem;
import net.sf.saxon.s9api.XdmNode;
import net.sf.saxon.s9api.XsltExecutable;
import net.sf.saxon.s9api.XsltTransformer;
import org.xml.sax.ErrorHandler;
import org.xml.sax.SAXParseException;

public class Validate {
  private static final String VEFA = "http://difi.no/xsd/vefa/validator/1.0";
  private static final String SVRL = "http://purl.oclc.org/dsdl/svrl";

  private final Processor processor = new Processor(false);
  private final XPathCompiler xpath = processor.newXPathCompiler();
  private final Map<String, Schema> schemas = new LinkedHashMap<>();
  private final Map<String, XsltExecutable> rules = new LinkedHashMap<>();

  public static void main(String[] args) throws Exception {
    Validate validate = new Validate();
    List<String> files = new ArrayList<>();
    for (int index = 0; index < args.length; index++) {
      String arg = args[index];
      if (arg.equals("--")) {
        for (index++; index < args.length; index++) files.add(args[index]);
      } else if (arg.equals("--xsd") || arg.equals("--rules")) {
        String[] pair = args[++index].split("=", 2);
        if (arg.equals("--xsd")) validate.addSchema(pair[0], pair[1]);
        else validate.addRules(pair[0], pair[1]);
      } else {
        throw new IllegalArgumentException("unknown argument " + arg);
      }
    }
    StringBuilder out = new StringBuilder("[");
    for (String file : files) validate.checkFile(file, out);
    if (out.length() > 1) out.setLength(out.length() - 1);
    System.out.println(out.append("]"));
  }

  Validate() {
    xpath.declareNamespace("svrl", SVRL);
    xpath.declareNamespace("vefa", VEFA);
  }

  void addSchema(String rootName, String path) throws Exception {
    // The JDK's own validator by name: Debian's Saxon jar puts Apache Xerces on the class path, whose factory
    // knows none of the JAXP properties that keep validation off the network.
    SchemaFactory factory = SchemaFactory.newInstance(
        XMLConstants.W3C_XML_SCHEMA_NS_URI,
        "com.sun.org.apache.xerces.internal.jaxp.validation.XMLSchemaFactory",
        null);
    // The schemas and the documents are local files: nothing may be fetched from the network.
    factory.setProperty(XMLConstants.ACCESS_EXTERNAL_SCHEMA, "file");
    factory.setProperty(XMLConstants.ACCESS_EXTERNAL_DTD, "");
    schemas.put(rootName, factory.newSchema(new File(path)));
  }

  void addRules(String name, String path) throws Exception {
    rules.put(name, processor.newXsltCompiler().compile(new StreamSource(new File(path))));
  }

  void checkFile(String file, StringBuilder out) throws Exception {
    XdmNode document = processor.newDocumentBuilder().build(new File(file));
    XdmNode root = (XdmNode) xpath.evaluateSingle("*", document);
    if (VEFA.equals(root.getNodeName().getNamespaceURI()) && root.getNodeName().getLocalName().equals("testSet")) {
      int index = 0;
      for (XdmItem test : xpath.evaluate("vefa:test", root)) {
        XdmNode embedded = (XdmNode) xpath.evaluateSingle("*[not(self::vefa:assert)]", (XdmNode) test);
        String text = processor.newSerializer().serializeNodeToString(embedded);
        XdmNode snippet = processor.newDocumentBuilder().build(new StreamSource(new StringReader(text)));
        out.append("{\"file\":").append(json(file)).append(",\"test\":").append(index++);
        out.append(",\"expected\":{\"success\":").append(texts("vefa:assert/vefa:success", (XdmNode) test));
        out.append(",\"error\":").append(texts("vefa:assert/vefa:error", (XdmNode) test));
        out.append(",\"warning\":").append(texts("vefa:assert/vefa:warning", (XdmNode) test)).append("}");
        out.append(",\"xsd\":null,\"rules\":");
        appendRules(snippet, out);
        out.append("},");
      }
      return;
    }
    out.append("{\"file\":").append(json(file)).append(",\"root\":").append(json(root.getNodeName().getLocalName()));
    out.append(",\"xsd\":");
    appendSchemaErrors(file, root.getNodeName().getLocalName(), out);
    out.append(",\"rules\":");
    appendRules(document, out);
    out.append("},");
  }

  private void appendSchemaErrors(String file, String rootName, StringBuilder out) throws Exception {
    Schema schema = schemas.get(rootName);
    if (schema == null) {
      out.append("[{\"line\":0,\"message\":").append(json("no schema for the root element " + rootName)).append("}]");
      return;
    }
    List<String> errors = new ArrayList<>();
    Validator validator = schema.newValidator();
    validator.setProperty(XMLConstants.ACCESS_EXTERNAL_SCHEMA, "");
    validator.setProperty(XMLConstants.ACCESS_EXTERNAL_DTD, "");
    validator.setErrorHandler(new ErrorHandler() {
      public void warning(SAXParseException e) {}
      public void error(SAXParseException e) { errors.add(entry(e)); }
      public void fatalError(SAXParseException e) { errors.add(entry(e)); }
    });
    try {
      validator.validate(new StreamSource(new File(file)));
    } catch (SAXParseException e) {
      // Reported through the handler already.
    }
    out.append("[").append(String.join(",", errors)).append("]");
  }

  private static String entry(SAXParseException e) {
    return "{\"line\":" + e.getLineNumber() + ",\"message\":" + json(e.getMessage()) + "}";
  }

  private void appendRules(XdmNode document, StringBuilder out) throws Exception {
    out.append("{");
    boolean first = true;
    for (Map.Entry<String, XsltExecutable> rule : rules.entrySet()) {
      XsltTransformer transformer = rule.getValue().load();
      transformer.setInitialContextNode(document);
      XdmDestination svrl = new XdmDestination();
      transformer.setDestination(svrl);
      transformer.transform();
      if (!first) out.append(",");
      first = false;
      out.append(json(rule.getKey())).append(":[");
      boolean firstFailure = true;
      for (XdmItem item : xpath.evaluate("//svrl:failed-assert | //svrl:successful-report", svrl.getXdmNode())) {
        XdmNode failure = (XdmNode) item;
        if (!firstFailure) out.append(",");
        firstFailure = false;
        out.append("{\"kind\":").append(json(failure.getNodeName().getLocalName()));
        out.append(",\"id\":").append(json(failure.getAttributeValue(new net.sf.saxon.s9api.QName("id"))));
        out.append(",\"flag\":").append(json(failure.getAttributeValue(new net.sf.saxon.s9api.QName("flag"))));
        out.append(",\"location\":").append(json(failure.getAttributeValue(new net.sf.saxon.s9api.QName("location"))));
        out.append(",\"text\":").append(json(xpath.evaluateSingle("normalize-space(svrl:text)", failure).getStringValue()));
        out.append("}");
      }
      out.append("]");
    }
    out.append("}");
  }

  private String texts(String path, XdmNode context) throws Exception {
    List<String> values = new ArrayList<>();
    for (XdmItem item : xpath.evaluate(path, context)) values.add(json(item.getStringValue().trim()));
    return "[" + String.join(",", values) + "]";
  }

  private static String json(String value) {
    if (value == null) return "null";
    StringBuilder out = new StringBuilder("\"");
    for (char c : value.toCharArray()) {
      switch (c) {
        case '"': out.append("\\\""); break;
        case '\\': out.append("\\\\"); break;
        case '\n': out.append("\\n"); break;
        case '\r': out.append("\\r"); break;
        case '\t': out.append("\\t"); break;
        default:
          if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
          else out.append(c);
      }
    }
    return out.append("\"").toString();
  }
}
