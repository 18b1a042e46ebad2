// The few declarations of the DNS Service Discovery C API (dns_sd.h) that ServiceDiscovery's
// `.system` backend uses, written from the API's public documentation: function pointer types for
// the entry points resolved at run time with dlsym, the reply callback types, and the constants.
// Nothing here links against a DNS-SD library: on Apple platforms the functions are found in
// libSystem, on Linux in Avahi's compatibility library (libdns_sd.so.1) when it is installed.
#ifndef SF_CDNSSERVICESHIM_H
#define SF_CDNSSERVICESHIM_H

#include <stdint.h>

/// An opaque reference to one DNS-SD operation (DNSServiceRef).
typedef struct SFDNSServiceOpaque *SFDNSServiceRef;
/// DNSServiceFlags.
typedef uint32_t SFDNSServiceFlags;
/// DNSServiceErrorType.
typedef int32_t SFDNSServiceErrorType;

/// Flags and error codes from dns_sd.h.
enum {
    SFDNSServiceFlagsMoreComing = 0x1,
    SFDNSServiceFlagsAdd = 0x2,
};
enum {
    SFDNSServiceErrNoError = 0,
    SFDNSServiceErrUnknown = -65537,
    SFDNSServiceErrNoSuchName = -65538,
    SFDNSServiceErrBadParam = -65540,
    SFDNSServiceErrUnsupported = -65544,
    SFDNSServiceErrNameConflict = -65548,
    SFDNSServiceErrServiceNotRunning = -65563,
};
enum {
    SFDNSServiceClassIN = 1,
    SFDNSServiceTypeA = 1,
    SFDNSServiceTypeAAAA = 28,
};

/// DNSServiceRegisterReply.
typedef void (*SFDNSServiceRegisterReply)(
    SFDNSServiceRef sdRef, SFDNSServiceFlags flags, SFDNSServiceErrorType errorCode, const char *name, const char *regtype,
    const char *domain, void *context);
/// DNSServiceBrowseReply.
typedef void (*SFDNSServiceBrowseReply)(
    SFDNSServiceRef sdRef, SFDNSServiceFlags flags, uint32_t interfaceIndex, SFDNSServiceErrorType errorCode,
    const char *serviceName, const char *regtype, const char *replyDomain, void *context);
/// DNSServiceResolveReply (port in network byte order; txtRecord in TXT wire format).
typedef void (*SFDNSServiceResolveReply)(
    SFDNSServiceRef sdRef, SFDNSServiceFlags flags, uint32_t interfaceIndex, SFDNSServiceErrorType errorCode,
    const char *fullname, const char *hosttarget, uint16_t port, uint16_t txtLen, const unsigned char *txtRecord,
    void *context);
/// DNSServiceQueryRecordReply.
typedef void (*SFDNSServiceQueryRecordReply)(
    SFDNSServiceRef sdRef, SFDNSServiceFlags flags, uint32_t interfaceIndex, SFDNSServiceErrorType errorCode,
    const char *fullname, uint16_t rrtype, uint16_t rrclass, uint16_t rdlen, const void *rdata, uint32_t ttl,
    void *context);

/// DNSServiceRegister.
typedef SFDNSServiceErrorType (*SFDNSServiceRegisterFunction)(
    SFDNSServiceRef *sdRef, SFDNSServiceFlags flags, uint32_t interfaceIndex, const char *name, const char *regtype,
    const char *domain, const char *host, uint16_t port, uint16_t txtLen, const void *txtRecord,
    SFDNSServiceRegisterReply callBack, void *context);
/// DNSServiceBrowse.
typedef SFDNSServiceErrorType (*SFDNSServiceBrowseFunction)(
    SFDNSServiceRef *sdRef, SFDNSServiceFlags flags, uint32_t interfaceIndex, const char *regtype, const char *domain,
    SFDNSServiceBrowseReply callBack, void *context);
/// DNSServiceResolve.
typedef SFDNSServiceErrorType (*SFDNSServiceResolveFunction)(
    SFDNSServiceRef *sdRef, SFDNSServiceFlags flags, uint32_t interfaceIndex, const char *name, const char *regtype,
    const char *domain, SFDNSServiceResolveReply callBack, void *context);
/// DNSServiceQueryRecord.
typedef SFDNSServiceErrorType (*SFDNSServiceQueryRecordFunction)(
    SFDNSServiceRef *sdRef, SFDNSServiceFlags flags, uint32_t interfaceIndex, const char *fullname, uint16_t rrtype,
    uint16_t rrclass, SFDNSServiceQueryRecordReply callBack, void *context);
/// DNSServiceRefSockFD.
typedef int (*SFDNSServiceRefSockFDFunction)(SFDNSServiceRef sdRef);
/// DNSServiceProcessResult.
typedef SFDNSServiceErrorType (*SFDNSServiceProcessResultFunction)(SFDNSServiceRef sdRef);
/// DNSServiceRefDeallocate.
typedef void (*SFDNSServiceRefDeallocateFunction)(SFDNSServiceRef sdRef);

#endif
