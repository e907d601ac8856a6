# Installing tilejit (included at the end of the top-level CMakeLists.txt):
#
#   cmake --install build --prefix PREFIX
#
# PREFIX/include/tilejit/    the public headers (tilejit/tilejit.h includes them all)
# PREFIX/lib/                libtilejit.a, and libtilejit.so.X.Y.Z with the SONAME libtilejit.so.X
# PREFIX/lib/cmake/tilejit/  find_package(tilejit): tilejit::tilejit (shared), tilejit::static
# PREFIX/lib/pkgconfig/      tilejit.pc (pkg-config --cflags --libs tilejit)
#
# rpath: the library depends only on libc, libm, pthreads and libdl (the CUDA
# driver and nvJitLink are dlopen'ed by name), so it carries no RUNPATH. A
# program linked against a PREFIX outside the loader's path finds it through
# its own rpath: CMake consumers get the imported location's directory in
# their build-tree rpath (set INSTALL_RPATH for their install); with
# pkg-config, add -Wl,-rpath,$(pkg-config --variable=libdir tilejit).
#
# A pip build (scikit-build-core sets SKBUILD) installs only the component
# `python`: libtilejit.so beside the tilejit package (pyproject.toml).

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set_target_properties(tilejit_shared PROPERTIES
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR} INSTALL_RPATH "")

if(SKBUILD)
  install(FILES $<TARGET_FILE:tilejit_shared> DESTINATION tilejit RENAME libtilejit.so COMPONENT python)
  return()
endif()

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/tilejit DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h" PATTERN "*.def")
install(TARGETS tilejit tilejit_shared
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_COMPONENT Development)

set(TJ_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tilejit)
file(RELATIVE_PATH TJ_PREFIX_FROM_CMAKE_DIR ${CMAKE_INSTALL_PREFIX}/${TJ_CMAKE_DIR} ${CMAKE_INSTALL_PREFIX})
set(TJ_SHARED_FILE ${CMAKE_SHARED_LIBRARY_PREFIX}tilejit${CMAKE_SHARED_LIBRARY_SUFFIX}.${PROJECT_VERSION})
set(TJ_SONAME ${CMAKE_SHARED_LIBRARY_PREFIX}tilejit${CMAKE_SHARED_LIBRARY_SUFFIX}.${PROJECT_VERSION_MAJOR})
if(APPLE)
  set(TJ_SHARED_FILE libtilejit.${PROJECT_VERSION}.dylib)
  set(TJ_SONAME @rpath/libtilejit.${PROJECT_VERSION_MAJOR}.dylib)
endif()
# What the static library needs besides itself: the system libraries, and
# LLVM where the native cpu back end is built in (the shared one links it).
set(TJ_STATIC_LINK_LIBS "m;Threads::Threads;${CMAKE_DL_LIBS}")
set(TJ_PC_LIBS_PRIVATE "-lm -lpthread -ldl")
if(TJ_HAVE_LLVM)
  list(APPEND TJ_STATIC_LINK_LIBS ${TJ_LLVM_LIB})
  string(APPEND TJ_PC_LIBS_PRIVATE " ${TJ_LLVM_LIB}")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/tilejit-config.cmake.in
  ${PROJECT_BINARY_DIR}/install/tilejit-config.cmake @ONLY)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/install/tilejit-config-version.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/install/tilejit-config.cmake
  ${PROJECT_BINARY_DIR}/install/tilejit-config-version.cmake DESTINATION ${TJ_CMAKE_DIR})

file(RELATIVE_PATH TJ_PREFIX_FROM_PC_DIR ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
configure_file(${CMAKE_CURRENT_LIST_DIR}/tilejit.pc.in ${PROJECT_BINARY_DIR}/install/tilejit.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/install/tilejit.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
