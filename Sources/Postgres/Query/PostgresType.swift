/// Type OIDs of the built-in types the wrapper binds and decodes (see `pg_type`).
public enum PostgresType {
    public static let unknown: UInt32 = 0
    public static let bool: UInt32 = 16
    public static let bytea: UInt32 = 17
    public static let name: UInt32 = 19
    public static let int8: UInt32 = 20
    public static let int2: UInt32 = 21
    public static let int4: UInt32 = 23
    public static let text: UInt32 = 25
    public static let oid: UInt32 = 26
    public static let json: UInt32 = 114
    public static let float4: UInt32 = 700
    public static let float8: UInt32 = 701
    public static let unknownLiteral: UInt32 = 705
    public static let int2Array: UInt32 = 1005
    public static let int4Array: UInt32 = 1007
    public static let textArray: UInt32 = 1009
    public static let varcharArray: UInt32 = 1015
    public static let int8Array: UInt32 = 1016
    public static let bpchar: UInt32 = 1042
    public static let varchar: UInt32 = 1043
    public static let date: UInt32 = 1082
    public static let timestamp: UInt32 = 1114
    public static let timestamptz: UInt32 = 1184
    public static let numeric: UInt32 = 1700
    public static let uuid: UInt32 = 2950
    public static let jsonb: UInt32 = 3802

    /// Readable name for error messages.
    static func describe(_ oid: UInt32) -> String {
        switch oid {
        case bool: "bool"
        case bytea: "bytea"
        case name: "name"
        case int8: "int8"
        case int2: "int2"
        case int4: "int4"
        case text: "text"
        case oid: "oid"
        case json: "json"
        case float4: "float4"
        case float8: "float8"
        case unknownLiteral: "unknown"
        case int2Array: "int2[]"
        case int4Array: "int4[]"
        case textArray: "text[]"
        case varcharArray: "varchar[]"
        case int8Array: "int8[]"
        case bpchar: "bpchar"
        case varchar: "varchar"
        case date: "date"
        case timestamp: "timestamp"
        case timestamptz: "timestamptz"
        case numeric: "numeric"
        case uuid: "uuid"
        case jsonb: "jsonb"
        default: "oid \(oid)"
        }
    }
}
