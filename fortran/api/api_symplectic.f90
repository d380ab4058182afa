! f2py interface of the constrained symplectic family (fortran/symplectic.f90):
! the coefficients and the canonical field, for tests (the methods themselves run
! through the one driver's `run`, fortran/api/api_run.f90).
! Plain arrays in, plain arrays out; the caller allocates the outputs.

!> Coefficients of the inner tableau: kind 0 = Gauss-Legendre, 1 = Lobatto IIIA (a) - IIIB (ahat),
!> 2 = explicit midpoint (s = 2).
!> info = 0 when every identity of fortran/core/tableaux.f90 holds.
subroutine prk_tableau(kind, s, a, ahat, b, c, info)
  use pyint_kinds
  use symplectic, only: sym_tableau
  implicit none
  integer(c_int), intent(in) :: kind, s
  real(c_double), intent(out) :: a(s, s), ahat(s, s), b(s), c(s)
  integer(c_int), intent(out) :: info
  integer :: e
  call sym_tableau(kind, s, a, ahat, b, c, e)
  info = e
end subroutine prk_tableau

!> The canonical field at (t, q, p): v = phi = M^{-1} p, psi = f + (M v)_q v,
!> and the Jacobians phi_q, phi_p, psi_q, psi_p (fortran/core/hamiltonian.f90).
subroutine canonical_field(model_id, ipar, nipar, rpar, nrpar, usercb, n, mh, mn, mflags, &
                           t, q, p, v, psi, phq, php, psq, psp, ierr)
  use pyint_kinds
  use pyint_model, only: model_t
  use pyint_registry, only: setup_model
  use pyint_hamiltonian, only: ham_work_t, ham_init, ham_field_jac
  implicit none
  integer(c_int), intent(in) :: model_id, nipar, nrpar, n, mh, mn
  integer(c_int), intent(in) :: ipar(nipar), mflags(3)
  real(c_double), intent(in) :: rpar(nrpar), t, q(n), p(n)
  real(c_double), intent(out) :: v(n), psi(n), phq(n, n), php(n, n), psq(n, n), psp(n, n)
  integer(c_int), intent(out) :: ierr
  external usercb
  interface
    subroutine usercb(req, t, n, q, v, nw, w, nout, out)
      import :: c_double, c_int
      integer(c_int), intent(in) :: req, n, nw, nout
      real(c_double), intent(in) :: t, q(n), v(n), w(nw)
      real(c_double), intent(inout) :: out(nout)
    end subroutine
  end interface
  class(model_t), allocatable :: m
  type(ham_work_t) :: hw
  integer :: e
  v = 0; psi = 0; phq = 0; php = 0; psq = 0; psp = 0
  call setup_model(model_id, ipar, rpar, usercb, n, mh, mn, mflags, m, e)
  ierr = e
  if (e /= 0) return
  call ham_init(hw, m, q, e)
  if (e == 0) call ham_field_jac(m, hw, t, q, p, v, psi, phq, php, psq, psp, e)
  ierr = e
end subroutine canonical_field
